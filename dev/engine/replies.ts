/** Reply constructors that take binary strings (the engine's internal representation). */
import type { Reply } from "../backend.js";
import { binaryToBytes, binaryToText } from "./bytes.js";

const OK: Reply = { type: "status", value: "OK" };
const NIL: Reply = { type: "bulk", value: null };
const NIL_ARRAY: Reply = { type: "array", value: null };
const ZERO: Reply = { type: "integer", value: 0n };
const ONE: Reply = { type: "integer", value: 1n };

export const R = {
  ok: (): Reply => OK,
  nil: (): Reply => NIL,
  nilArray: (): Reply => NIL_ARRAY,
  status: (binary: string): Reply => ({ type: "status", value: binaryToText(binary) }),
  error: (binary: string): Reply => ({ type: "error", message: binaryToText(binary) }),
  int: (value: bigint | number | boolean): Reply => {
    if (value === true || value === 1) return ONE;
    if (value === false || value === 0) return ZERO;
    return { type: "integer", value: BigInt(value) };
  },
  bulk: (binary: string | null | undefined): Reply =>
    binary == null ? NIL : { type: "bulk", value: binaryToBytes(binary) },
  array: (items: readonly Reply[] | null): Reply => ({ type: "array", value: items }),
  bulks: (items: readonly (string | null | undefined)[]): Reply => ({
    type: "array",
    value: items.map((item) => R.bulk(item)),
  }),
} as const;

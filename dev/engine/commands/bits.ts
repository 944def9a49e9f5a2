/**
 * Bit commands over string values: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD(_RO).
 * Strings are binary strings (one char per byte); bit 0 is the most significant bit of byte 0.
 */
import type { Reply } from "../../backend.js";
import { asciiLower, isKeyword } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { Errors, fail } from "../errors.js";
import { parseInt64 } from "../numbers.js";
import { R } from "../replies.js";
import { intArg, lookupTyped, smallIntArg } from "./util.js";

const BIT_OFFSET_ERROR = "ERR bit offset is not an integer or out of range";
/** 512 MB worth of bits: Redis's proto-max-bulk-len bound on a string. */
const MAX_BIT_OFFSET = 512n * 1024n * 1024n * 8n - 1n;

function getString(ctx: CommandContext, key: string): string | undefined {
  return lookupTyped(ctx, key, "string")?.data;
}

function bitOffsetArg(text: string): number {
  const offset = parseInt64(text);
  if (offset === null || offset < 0n || offset > MAX_BIT_OFFSET) fail(BIT_OFFSET_ERROR);
  return Number(offset);
}

function bitAt(value: string, offset: number): number {
  const byte = offset >> 3;
  if (byte >= value.length) return 0;
  return (value.charCodeAt(byte) >> (7 - (offset & 7))) & 1;
}

/** The bytes of `value` (zero-padded to `minLength`) as a mutable array, for in-place edits. */
function bytesOf(value: string, minLength: number): number[] {
  const out = new Array<number>(Math.max(value.length, minLength)).fill(0);
  for (let i = 0; i < value.length; i++) out[i] = value.charCodeAt(i);
  return out;
}

function fromBytes(bytes: readonly number[]): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    out += String.fromCharCode(...bytes.slice(i, i + 8192));
  }
  return out;
}

/** Stores an edited string in place: the key keeps its TTL, like Redis's in-place updates. */
function writeString(ctx: CommandContext, key: string, data: string): void {
  ctx.db.set(key, { type: "string", data }, true);
}

function setbit(ctx: CommandContext, argv: readonly string[]): Reply {
  const key = argv[1]!;
  const offset = bitOffsetArg(argv[2]!);
  const bit = argv[3];
  if (bit !== "0" && bit !== "1") fail("ERR bit is not an integer or out of range");
  const current = getString(ctx, key) ?? "";
  const old = bitAt(current, offset);
  const bytes = bytesOf(current, (offset >> 3) + 1);
  const mask = 1 << (7 - (offset & 7));
  bytes[offset >> 3] = bit === "1" ? bytes[offset >> 3]! | mask : bytes[offset >> 3]! & ~mask;
  writeString(ctx, key, fromBytes(bytes));
  return R.int(old);
}

function getbit(ctx: CommandContext, argv: readonly string[]): Reply {
  const offset = bitOffsetArg(argv[2]!);
  return R.int(bitAt(getString(ctx, argv[1]!) ?? "", offset));
}

/** BITCOUNT/BITPOS ranges: Redis's negative-index clamping, in bytes or (BIT) in bits. */
function clampBitRange(
  start: number,
  end: number,
  total: number,
): { first: number; last: number } | null {
  let s = start < 0 ? total + start : start;
  let e = end < 0 ? total + end : end;
  if (s < 0) s = 0;
  if (e < 0) e = 0;
  if (e >= total) e = total - 1;
  return s > e ? null : { first: s, last: e };
}

function unitIsBit(arg: string | undefined): boolean {
  if (arg === undefined || isKeyword(arg, "byte")) return false;
  if (isKeyword(arg, "bit")) return true;
  return fail(Errors.syntax);
}

function bitcount(ctx: CommandContext, argv: readonly string[]): Reply {
  const value = getString(ctx, argv[1]!);
  if (value === undefined) return R.int(0);
  let firstBit = 0;
  let lastBit = value.length * 8 - 1;
  if (argv.length === 4 || argv.length === 5) {
    const start = smallIntArg(argv[2]);
    const end = smallIntArg(argv[3]);
    const isBit = unitIsBit(argv[4]);
    if (start < 0 && end < 0 && start > end) return R.int(0);
    const range = clampBitRange(start, end, isBit ? value.length * 8 : value.length);
    if (range === null) return R.int(0);
    firstBit = isBit ? range.first : range.first * 8;
    lastBit = isBit ? range.last : range.last * 8 + 7;
  } else if (argv.length !== 2) {
    fail(Errors.syntax);
  }
  let count = 0;
  for (let bit = firstBit; bit <= lastBit; bit++) count += bitAt(value, bit);
  return R.int(count);
}

function bitpos(ctx: CommandContext, argv: readonly string[]): Reply {
  const target = smallIntArg(argv[2]);
  if (target !== 0 && target !== 1) fail("ERR The bit argument must be 1 or 0.");
  const value = getString(ctx, argv[1]!);
  // A missing key is an endless run of zero bits.
  if (value === undefined) return R.int(target === 1 ? -1 : 0);
  let firstBit = 0;
  let lastBit = value.length * 8 - 1;
  let endGiven = false;
  if (argv.length >= 4 && argv.length <= 6) {
    const start = smallIntArg(argv[3]);
    const isBit = unitIsBit(argv[5]);
    const total = isBit ? value.length * 8 : value.length;
    endGiven = argv.length >= 5;
    const end = endGiven ? smallIntArg(argv[4]) : total - 1;
    const range = clampBitRange(start, end, total);
    if (range === null) return R.int(-1);
    firstBit = isBit ? range.first : range.first * 8;
    lastBit = isBit ? range.last : range.last * 8 + 7;
  } else if (argv.length !== 3) {
    fail(Errors.syntax);
  }
  if (firstBit > lastBit) return R.int(-1);
  for (let bit = firstBit; bit <= lastBit; bit++)
    if (bitAt(value, bit) === target) return R.int(bit);
  // Looking for a clear bit without an explicit end: the string continues with zeros.
  if (target === 0 && !endGiven) return R.int((Math.floor(lastBit / 8) + 1) * 8);
  return R.int(-1);
}

function bitop(ctx: CommandContext, argv: readonly string[]): Reply {
  const op = asciiLower(argv[1]!);
  if (op !== "and" && op !== "or" && op !== "xor" && op !== "not") fail(Errors.syntax);
  const sources = argv.slice(3);
  if (op === "not" && sources.length !== 1) {
    fail("ERR BITOP NOT must be called with a single source key.");
  }
  const values = sources.map((key) => getString(ctx, key) ?? "");
  const length = Math.max(...values.map((v) => v.length));
  const dest = argv[2]!;
  if (length === 0) {
    ctx.db.delete(dest);
    return R.int(0);
  }
  const out = new Array<number>(length);
  for (let i = 0; i < length; i++) {
    const byteOf = (v: string) => (i < v.length ? v.charCodeAt(i) : 0);
    let acc = byteOf(values[0]!);
    if (op === "not") acc = ~acc & 0xff;
    for (const v of values.slice(1)) {
      if (op === "and") acc &= byteOf(v);
      else if (op === "or") acc |= byteOf(v);
      else acc ^= byteOf(v);
    }
    out[i] = acc;
  }
  ctx.db.set(dest, { type: "string", data: fromBytes(out) });
  return R.int(length);
}

// ---- BITFIELD -------------------------------------------------------------------------------

type Overflow = "wrap" | "sat" | "fail";

interface FieldType {
  readonly signed: boolean;
  readonly bits: number;
}

type FieldOp =
  | { readonly kind: "get"; readonly type: FieldType; readonly offset: number }
  | {
      readonly kind: "set" | "incrby";
      readonly type: FieldType;
      readonly offset: number;
      readonly value: bigint;
      readonly overflow: Overflow;
    };

function fieldTypeArg(text: string): FieldType {
  const sign = text[0];
  const bits = parseInt64(text.slice(1));
  const signed = sign === "i" || sign === "I";
  if (
    (!signed && sign !== "u" && sign !== "U") ||
    bits === null ||
    bits < 1n ||
    bits > (signed ? 64n : 63n)
  ) {
    fail(
      "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
    );
  }
  return { signed, bits: Number(bits) };
}

/** `N` or `#N` (N fields of this type), as a bit offset. */
function fieldOffsetArg(text: string, type: FieldType): number {
  const byType = text.startsWith("#");
  const parsed = parseInt64(byType ? text.slice(1) : text);
  if (parsed === null) fail(BIT_OFFSET_ERROR);
  const offset = byType ? parsed * BigInt(type.bits) : parsed;
  if (offset < 0n || offset > MAX_BIT_OFFSET) fail(BIT_OFFSET_ERROR);
  return Number(offset);
}

function parseFieldOps(argv: readonly string[], readOnly: boolean): FieldOp[] {
  const ops: FieldOp[] = [];
  let overflow: Overflow = "wrap";
  for (let j = 2; j < argv.length; j++) {
    const sub = asciiLower(argv[j]!);
    const left = argv.length - j - 1;
    if (sub === "get" && left >= 2) {
      const type = fieldTypeArg(argv[j + 1]!);
      ops.push({ kind: "get", type, offset: fieldOffsetArg(argv[j + 2]!, type) });
      j += 2;
    } else if ((sub === "set" || sub === "incrby") && left >= 3) {
      const type = fieldTypeArg(argv[j + 1]!);
      const offset = fieldOffsetArg(argv[j + 2]!, type);
      ops.push({ kind: sub, type, offset, value: intArg(argv[j + 3]), overflow });
      j += 3;
    } else if (sub === "overflow" && left >= 1) {
      const mode = asciiLower(argv[++j]!);
      if (mode !== "wrap" && mode !== "sat" && mode !== "fail") {
        fail("ERR Invalid OVERFLOW type specified");
      }
      overflow = mode;
    } else {
      fail(Errors.syntax);
    }
  }
  if (readOnly && ops.some((op) => op.kind !== "get")) {
    fail("ERR BITFIELD_RO only supports the GET subcommand");
  }
  return ops;
}

function readField(bytes: readonly number[], offset: number, type: FieldType): bigint {
  let raw = 0n;
  for (let i = 0; i < type.bits; i++) {
    const bit = offset + i;
    const byte = bytes[bit >> 3] ?? 0;
    raw = (raw << 1n) | BigInt((byte >> (7 - (bit & 7))) & 1);
  }
  return type.signed ? BigInt.asIntN(type.bits, raw) : raw;
}

function writeField(bytes: number[], offset: number, type: FieldType, value: bigint): void {
  const raw = BigInt.asUintN(type.bits, value);
  for (let i = 0; i < type.bits; i++) {
    const bit = offset + i;
    const mask = 1 << (7 - (bit & 7));
    const on = (raw >> BigInt(type.bits - 1 - i)) & 1n;
    bytes[bit >> 3] = on ? bytes[bit >> 3]! | mask : bytes[bit >> 3]! & ~mask;
  }
}

/** The value a SET/INCRBY stores under the overflow policy, or null when FAIL refuses it. */
function applyOverflow(wanted: bigint, type: FieldType, overflow: Overflow): bigint | null {
  const max = type.signed ? (1n << BigInt(type.bits - 1)) - 1n : (1n << BigInt(type.bits)) - 1n;
  const min = type.signed ? -max - 1n : 0n;
  if (wanted >= min && wanted <= max) return wanted;
  if (overflow === "fail") return null;
  if (overflow === "sat") return wanted > max ? max : min;
  return type.signed ? BigInt.asIntN(type.bits, wanted) : BigInt.asUintN(type.bits, wanted);
}

function bitfieldCommand(readOnly: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const ops = parseFieldOps(argv, readOnly);
    const key = argv[1]!;
    const current = getString(ctx, key);
    const writes = ops.filter((op) => op.kind !== "get");
    // Redis grows the string to the highest written bit before running the ops (even on FAIL).
    const highest = Math.max(-1, ...writes.map((op) => op.offset + op.type.bits - 1));
    const bytes = bytesOf(current ?? "", highest < 0 ? 0 : (highest >> 3) + 1);
    const replies: Reply[] = [];
    for (const op of ops) {
      const old = readField(bytes, op.offset, op.type);
      if (op.kind === "get") {
        replies.push(R.int(old));
        continue;
      }
      // SET takes the 64-bit argument as is (unsigned fields see it as two's complement).
      const wanted =
        op.kind === "incrby"
          ? old + op.value
          : op.type.signed
            ? op.value
            : BigInt.asUintN(64, op.value);
      const stored = applyOverflow(wanted, op.type, op.overflow);
      if (stored === null) {
        replies.push(R.nil());
        continue;
      }
      writeField(bytes, op.offset, op.type, stored);
      replies.push(R.int(op.kind === "set" ? old : stored));
    }
    if (writes.length > 0) writeString(ctx, key, fromBytes(bytes));
    return R.array(replies);
  };
}

export const bitCommands: readonly CommandSpec[] = [
  { name: "setbit", arity: 4, write: true, handler: setbit },
  { name: "getbit", arity: 3, handler: getbit },
  { name: "bitcount", arity: -2, handler: bitcount },
  { name: "bitpos", arity: -3, handler: bitpos },
  { name: "bitop", arity: -4, write: true, handler: bitop },
  { name: "bitfield", arity: -2, write: true, handler: bitfieldCommand(false) },
  { name: "bitfield_ro", arity: -2, handler: bitfieldCommand(true) },
];

/**
 * Scripts reply with flat integer arrays, which survive the REST encoding unchanged; anything
 * else means an unexpected backend, never to be read as "acquired" or "released".
 */
import { LockBackendError } from "../errors.js";
import { shownSafely } from "../transport/failures.js";

function unexpected(value: unknown, scriptName: string): LockBackendError {
  return new LockBackendError(
    `Unexpected reply from ${scriptName}: ${shownSafely(value)}. Is the redis option an HTTP Redis client with default decoding?`,
  );
}

/** Numeric strings accepted; else LockBackendError. */
export function integerReply(value: unknown, scriptName: string): number[] {
  if (Array.isArray(value) && value.length > 0) {
    const numbers = value.map((item) => (typeof item === "string" ? Number(item) : item));
    if (numbers.every((item) => typeof item === "number" && Number.isInteger(item))) {
      return numbers as number[];
    }
  }
  throw unexpected(value, scriptName);
}

/** Per status (the first element), the lengths it may have; "any": one element per member. */
export type ReplyShapes = Readonly<Record<number, readonly number[] | "any">>;

/** Like integerReply, with a status and length the script documents. */
export function checkedReply(value: unknown, scriptName: string, shapes: ReplyShapes): number[] {
  const numbers = integerReply(value, scriptName);
  const lengths = shapes[numbers[0] ?? Number.NaN];
  if (lengths === "any" || lengths?.includes(numbers.length)) return numbers;
  throw unexpected(value, scriptName);
}

export const YES_OR_NO: ReplyShapes = { 1: [1], 0: [1] };

/** Redis's -2 (no key) and -1 (no expiry) become null. */
export function ttlOrNull(pttl: number | undefined): number | null {
  return pttl === undefined || pttl < 0 ? null : pttl;
}

/**
 * Lock scripts reply with flat arrays of integers: they survive the REST encoding (base64 and
 * JSON parsing) unchanged. Anything else means the backend is not the Redis we think it is, and
 * must never be read as "acquired" or "released".
 */
import { LockBackendError } from "../errors.js";
import { shownSafely } from "../transport/failures.js";

function unexpected(value: unknown, scriptName: string): LockBackendError {
  return new LockBackendError(
    `Unexpected reply from ${scriptName}: ${shownSafely(value)}. Is the redis option an HTTP Redis client with default decoding?`,
  );
}

/** A non-empty array of integers (numeric strings accepted), else LockBackendError. */
export function integerReply(value: unknown, scriptName: string): number[] {
  if (Array.isArray(value) && value.length > 0) {
    const numbers = value.map((item) => (typeof item === "string" ? Number(item) : item));
    if (numbers.every((item) => typeof item === "number" && Number.isInteger(item))) {
      return numbers as number[];
    }
  }
  throw unexpected(value, scriptName);
}

/**
 * The reply shapes a script documents: for each status (the first element) the lengths it may
 * have, or "any" for replies whose length depends on the input (one element per member).
 */
export type ReplyShapes = Readonly<Record<number, readonly number[] | "any">>;

/** Like integerReply, and the status must be one the script returns, with a matching length. */
export function checkedReply(value: unknown, scriptName: string, shapes: ReplyShapes): number[] {
  const numbers = integerReply(value, scriptName);
  const lengths = shapes[numbers[0] ?? Number.NaN];
  if (lengths === "any" || lengths?.includes(numbers.length)) return numbers;
  throw unexpected(value, scriptName);
}

/** Shapes of the scripts that answer {1} or {0} and nothing else. */
export const YES_OR_NO: ReplyShapes = { 1: [1], 0: [1] };

/** A pttl as Redis reports it (-2 no key, -1 no expiry) as a duration or null when unknown. */
export function ttlOrNull(pttl: number | undefined): number | null {
  return pttl === undefined || pttl < 0 ? null : pttl;
}

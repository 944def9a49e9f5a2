/**
 * Lock scripts reply with flat arrays of integers: they survive the REST encoding (base64 and
 * JSON parsing) unchanged. Anything else means the backend is not the Redis we think it is.
 */
import { LockBackendError } from "../errors.js";

export function integerReply(value: unknown, scriptName: string): number[] {
  if (Array.isArray(value) && value.length > 0) {
    const numbers = value.map((item) => (typeof item === "string" ? Number(item) : item));
    if (numbers.every((item) => typeof item === "number" && Number.isInteger(item))) {
      return numbers as number[];
    }
  }
  const shown = JSON.stringify(value) ?? String(value);
  throw new LockBackendError(
    `Unexpected reply from ${scriptName}: ${shown.slice(0, 200)}. Is the redis option an HTTP Redis client with default decoding?`,
  );
}

/** A pttl as Redis reports it (-2 no key, -1 no expiry) as a duration or null when unknown. */
export function ttlOrNull(pttl: number | undefined): number | null {
  return pttl === undefined || pttl < 0 ? null : pttl;
}

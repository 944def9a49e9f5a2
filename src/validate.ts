/** Input checks before any request: a LockInputError that says what to change. */
import { LockInputError } from "./errors.js";

/** Shortest lease accepted: below a round trip or two a lease expires before it is of use. */
export const MIN_LEASE_MS = 100;
/** Longest duration accepted (about 24.8 days): the largest delay a JavaScript timer can hold. */
export const MAX_DURATION_MS = 2_147_483_647;
/** Longest lock name, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 1024;
const MAX_PREFIX_BYTES = 128;
const OWNER_PATTERN = /^[\x21-\x7e]{16,256}$/;

const utf8 = new TextEncoder();

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "string") return `a string of length ${value.length}`;
  if (typeof value === "number") return String(value);
  return typeof value;
}

function checkKeyPart(value: unknown, what: string, maxBytes: number): string {
  if (typeof value !== "string") {
    throw new LockInputError(`The ${what} must be a string, got ${describe(value)}.`);
  }
  if (value.length === 0) throw new LockInputError(`The ${what} must not be empty.`);
  // A lone surrogate travels as U+FFFD: two different names would share one key.
  if (/\p{Cs}/u.test(value)) throw new LockInputError(`The ${what} must be well-formed Unicode.`);
  const bytes = utf8.encode(value).length;
  if (bytes > maxBytes) {
    throw new LockInputError(
      `The ${what} is ${bytes} bytes long; the limit is ${maxBytes} UTF-8 bytes. Hash long names first.`,
    );
  }
  // Braces would move the Redis Cluster hash tag that keeps all keys of one lock in one slot.
  if (value.includes("{") || value.includes("}")) {
    throw new LockInputError(
      `The ${what} must not contain "{" or "}" (they delimit the hash tag).`,
    );
  }
  return value;
}

/** A lock name: a non-empty string of at most 1024 UTF-8 bytes without braces. */
export function checkLockName(name: unknown): string {
  return checkKeyPart(name, "lock name", MAX_NAME_BYTES);
}

/** A key prefix: a non-empty string of at most 128 UTF-8 bytes without braces. */
export function checkPrefix(prefix: unknown): string {
  return checkKeyPart(prefix, "key prefix", MAX_PREFIX_BYTES);
}

/** An owner token: 16 to 256 printable ASCII characters, no spaces. */
export function checkOwner(owner: unknown): string {
  if (typeof owner !== "string" || !OWNER_PATTERN.test(owner)) {
    throw new LockInputError(
      `The owner must be 16 to 256 printable ASCII characters without spaces (got ${describe(owner)}); ` +
        "use the `owner` of a handle, or a random token of your own.",
    );
  }
  return owner;
}

interface DurationRule {
  /** Smallest accepted value (inclusive). */
  min: number;
  /** Largest accepted value (inclusive). Default MAX_DURATION_MS. */
  max?: number;
  /** Whether `Infinity` means "no limit". */
  allowInfinity?: boolean;
}

/** A duration in whole milliseconds within `[rule.min, rule.max ?? MAX_DURATION_MS]`. */
export function checkDuration(value: unknown, what: string, rule: DurationRule): number {
  if (typeof value !== "number" || Number.isNaN(value)) {
    throw new LockInputError(`${what} must be a number of milliseconds, got ${describe(value)}.`);
  }
  if (value === Number.POSITIVE_INFINITY && rule.allowInfinity) return value;
  if (!Number.isInteger(value)) {
    throw new LockInputError(`${what} must be a whole number of milliseconds, got ${value}.`);
  }
  const max = rule.max ?? MAX_DURATION_MS;
  if (value < rule.min || value > max) {
    throw new LockInputError(`${what} must be between ${rule.min} and ${max} ms, got ${value}.`);
  }
  return value;
}

/** A lease: whole milliseconds, at least MIN_LEASE_MS. */
export function checkLease(value: unknown, what = "leaseMs"): number {
  return checkDuration(value, what, { min: MIN_LEASE_MS });
}

/** A whole number within `[min, max]` (counts, budgets). */
export function checkCount(value: unknown, what: string, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new LockInputError(
      `${what} must be a whole number from ${min} to ${max}, got ${describe(value)}.`,
    );
  }
  return value;
}

export function checkSignal(value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined;
  if (typeof AbortSignal !== "undefined" && value instanceof AbortSignal) return value;
  throw new LockInputError(`signal must be an AbortSignal, got ${describe(value)}.`);
}

/** An options bag whose keys are all known, so that a typo (`leaseMS`) is not a silent default. */
export function checkOptions<T extends object>(
  value: unknown,
  what: string,
  knownKeys: readonly (keyof T & string)[],
): Partial<T> {
  if (value === undefined) return {};
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new LockInputError(`${what} must be an object, got ${describe(value)}.`);
  }
  for (const key of Object.keys(value)) {
    if (!(knownKeys as readonly string[]).includes(key)) {
      throw new LockInputError(
        `${what} has an unknown option "${key}"; known options: ${knownKeys.join(", ")}.`,
      );
    }
  }
  return value as Partial<T>;
}

/** An option's value checked by `check`, or `fallback` when the option was left out. */
export function orDefault<T>(value: T | undefined, fallback: T, check: (value: T) => T): T {
  return value === undefined ? fallback : check(value);
}

/**
 * @internal What a lock made of locks (MultiLock, RedLock) needs from a member, kept off the
 * public objects in a registry only the library reads.
 */
import type { LockKeys } from "../hold/keys.js";
import type { LockRuntime } from "../wait/runtime.js";
import type { LockKind } from "./single-name-lock.js";

export interface LockInternals {
  readonly runtime: LockRuntime;
  readonly keys: LockKeys;
  readonly kind: LockKind;
}

const internals = new WeakMap<object, LockInternals>();

export function registerLockInternals(lock: object, value: LockInternals): void {
  internals.set(lock, value);
}

/** Set for locks made by `client.lock()` or `fairLock()`. */
export function lockInternalsOf(value: unknown): LockInternals | undefined {
  return typeof value === "object" && value !== null ? internals.get(value) : undefined;
}

/**
 * Redis keys of a read-write lock. The write side is a reentrant lock's hash (owner → write
 * holds, its TTL the write lease), so the write lock extends, releases and inspects like one.
 * Read holds live apart, each with its own expiry.
 */
import { type LockKeys, lockKeys } from "../keys.js";

export interface ReadWriteLockKeys extends LockKeys {
  /** Sorted set: read hold (`<owner> <hold id>`) → expiry (server ms). */
  readonly reads: string;
  /** Hash: owner → number of its read holds. Kept in step with `reads`. */
  readonly readers: string;
  /** Sorted set: waiting writer → deadline (server ms), for writer preference. */
  readonly writers: string;
}

export function readWriteLockKeys(prefix: string, name: string): ReadWriteLockKeys {
  const keys = lockKeys(prefix, name);
  return {
    ...keys,
    reads: `${keys.lock}:reads`,
    readers: `${keys.lock}:readers`,
    writers: `${keys.lock}:writers`,
  };
}

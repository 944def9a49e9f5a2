/**
 * Redis keys of a fair lock: the plain lock's (so that holds, extend, release and inspection are
 * the reentrant lock's own) plus the waiting queue and the hand-off statistics that pace it.
 */
import { type LockKeys, lockKeys } from "../keys.js";

export interface FairLockKeys extends LockKeys {
  /** Sorted set: waiting owner → ticket (enqueue time in ms, strictly increasing). */
  readonly queue: string;
  /** Sorted set: waiting owner → deadline (server ms); refreshed at every poll. */
  readonly timeouts: string;
  /** Hash: `at` → server ms of the last new holder, `slot` → average ms per hand-off. */
  readonly pace: string;
}

export function fairLockKeys(prefix: string, name: string): FairLockKeys {
  const keys = lockKeys(prefix, name);
  return {
    ...keys,
    queue: `${keys.lock}:queue`,
    timeouts: `${keys.lock}:timeouts`,
    pace: `${keys.lock}:pace`,
  };
}

/**
 * Where the reentrant lock keeps what its waiters learn (see src/wait/pace.ts): two keys beside
 * the lock, under its hash tag, both expiring on their own. (The fair lock keeps its own `:pace`.)
 */
import type { LockKeys } from "../keys.js";

/** How long the hold statistics outlive the last acquisition or release: one hour. */
export const PACE_TTL_MS = 3_600_000;

/** Hash: `at` (server ms of the current holder's first acquisition), `hold` (average hold ms). */
export function paceKey(keys: LockKeys): string {
  return `${keys.lock}:holds`;
}

/** Sorted set: waiter owner -> server ms of its last busy poll. */
export function waitersKey(keys: LockKeys): string {
  return `${keys.lock}:pollers`;
}

/**
 * A hold of permits: the shared lock handle (lease, watchdog, loss, `release`, `extend`,
 * `await using`) and how many permits it holds.
 */
import type { LockHandle } from "../../hold/handle.js";

/**
 * What `semaphore.acquire()` returns: a LockHandle whose `fencingToken` grows with every
 * acquisition of the semaphore, plus `permits`.
 */
export type PermitHandle = LockHandle & {
  /** How many permits this hold has. */
  readonly permits: number;
};

/** `hold`, labelled with its permit count. */
export function permitHandle(hold: LockHandle, permits: number): PermitHandle {
  return Object.defineProperty(hold as PermitHandle, "permits", {
    value: permits,
    enumerable: true,
  });
}

/**
 * Work guarded by a lock starts only on a hold that is still valid. An acquire whose answer came
 * back slower than the lease returns a hold that is already lost (its `signal` aborted): Redis may
 * have let the lease end and given the lock to another owner meanwhile, and work started on it
 * would run beside that owner. The callers that start the work themselves (`withLock`, Hono's
 * middlewares) ask again instead.
 */
import { LockBackendError } from "../errors.js";
import type { HeldLock } from "./held-lock.js";

/** Holds lost on arrival in a row before the backend is called too slow for the lease. */
const LATE_HOLDS_IN_A_ROW = 3;

/**
 * Acquires with `acquire(waitMs)` until the hold is still valid when it arrives. A hold lost on
 * arrival is released (owner- and token-checked: nothing if it is gone) and asked for again
 * within what is left of `waitMs`; a busy lock then throws as the acquire does.
 *
 * @param waitMs - the caller's wait (undefined: the acquire's default)
 * @throws LockBackendError when three holds in a row arrived lost: Redis answers slower than the
 *   lease
 */
export async function acquireLiveHold<H extends Pick<HeldLock, "name" | "signal" | "release">>(
  acquire: (waitMs: number | undefined) => Promise<H>,
  waitMs: number | undefined,
): Promise<H> {
  // The first call as given (the acquire checks the input); each later one within what is left.
  const deadline = typeof waitMs === "number" ? Date.now() + waitMs : undefined;
  for (let late = 0; ; ) {
    const held = await acquire(
      late === 0 || deadline === undefined ? waitMs : Math.max(0, deadline - Date.now()),
    );
    if (!held.signal.aborted) return held;
    // Lost already; its release fails or frees what is left of a lease Redis counts later.
    await held.release().catch(() => undefined);
    late += 1;
    if (late === LATE_HOLDS_IN_A_ROW) {
      throw new LockBackendError(
        `Acquired "${held.name}" ${late} times in a row, each answer arriving after its lease ` +
          "had ended: Redis answers slower than the lease. Use a longer leaseMs, or the watchdog " +
          "(no leaseMs).",
      );
    }
  }
}

/** What the middleware needs of a lock and its hold, structurally; every edgelock lock fits. */
import type * as Handles from "../hold/held-lock.js";
import type { AcquireOptions } from "../wait/acquire.js";

/**
 * The part of a hold the middleware uses (its name, its signal, and releasing it); picked from
 * the handles' `HeldLock` so the two cannot drift. Every edgelock handle is one.
 */
export interface ReleasableHold
  extends Pick<Handles.HeldLock, "name" | "released" | "signal" | "release"> {}

/** A lock that `withLock()` can acquire: `acquire()` resolves to a hold or throws on timeout. */
export interface AcquirableLock<H extends ReleasableHold = ReleasableHold> {
  acquire(options?: AcquireOptions): Promise<H>;
}

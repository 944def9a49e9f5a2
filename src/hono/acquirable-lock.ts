/** What the middleware needs of a lock and its hold, structurally; every edgelock lock fits. */
import type * as Handles from "../locks/held-lock.js";
import type { AcquireOptions } from "../wait/acquire.js";

/** A hold as the middleware uses it; picked from the handles' HeldLock so the two cannot drift. */
export interface HeldLock
  extends Pick<Handles.HeldLock, "name" | "released" | "signal" | "release"> {}

/** A lock that `withLock()` can acquire: `acquire()` resolves to a hold or throws on timeout. */
export interface AcquirableLock<H extends HeldLock = HeldLock> {
  acquire(options?: AcquireOptions): Promise<H>;
}

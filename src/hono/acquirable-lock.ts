/**
 * What the middleware needs of a lock and of its hold, structurally: every edgelock lock kind
 * (lock, fair lock, read or write lock, multi-lock, RedLock) and every handle they return fit,
 * and so does anything else that can be acquired and released the same way.
 */

import type * as Handles from "../locks/held-lock.js";
import type { AcquireOptions } from "../wait/acquire.js";

/**
 * A hold as the middleware uses it: released once, its loss reported through `signal`, a
 * background retry stopped once `released`. Picked from the handles' HeldLock, so that the two
 * cannot drift apart.
 */
export interface HeldLock
  extends Pick<Handles.HeldLock, "name" | "released" | "signal" | "release"> {}

/** A lock that `withLock()` can acquire: `acquire()` resolves to a hold or throws on timeout. */
export interface AcquirableLock<H extends HeldLock = HeldLock> {
  acquire(options?: AcquireOptions): Promise<H>;
}

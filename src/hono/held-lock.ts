/**
 * What the middleware needs of a lock and of its hold, structurally: every edgelock lock kind
 * (lock, fair lock, read or write lock, multi-lock, RedLock) and every handle they return fit,
 * and so does anything else that can be acquired and released the same way.
 */
import type { AcquireOptions } from "../locks/acquisition.js";

/** A hold as the middleware uses it: released once, its loss reported through `signal`. */
export interface HeldLock {
  /** The lock's name (reported to `onFailure`). */
  readonly name: string;
  /** True once released (or lost for good); a background retry stops then. */
  readonly released: boolean;
  /** Aborts when the hold is known to be lost. */
  readonly signal: AbortSignal;
  release(): Promise<void>;
}

/** A lock that `withLock()` can acquire: `acquire()` resolves to a hold or throws on timeout. */
export interface AcquirableLock<H extends HeldLock = HeldLock> {
  acquire(options?: AcquireOptions): Promise<H>;
}

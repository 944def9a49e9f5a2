/// <reference lib="esnext.disposable" preserve="true" />
// The line above keeps this module's .d.ts self-contained for users whose lib lacks disposables.
/**
 * The contract every handle honours — the plain handle (lock, fair lock, read and write locks),
 * the MultiLock's and the RedLock's — so that code taking "a held lock" (withLock, a helper of
 * yours) works with any of them.
 */
export interface HeldLock extends AsyncDisposable {
  /** The lock's name (a MultiLock's: its members' names joined). */
  readonly name: string;
  /** The owner token the hold was taken with. */
  readonly owner: string;
  /**
   * The hold's fencing token: it grows with every new holder of the lock. Null for handles that
   * span several locks or databases (MultiLock, RedLock): no single token guards them; use
   * their `fencingTokens`.
   */
  readonly fencingToken: number | null;
  /** The lease in ms, as acquired or last extended (watchdog mode: the watchdog timeout). */
  readonly leaseMs: number;
  /** The latest moment (client clock, ms) the hold is surely trusted until, without renewal. */
  readonly expiresAt: number;
  /** True when a watchdog renews the hold (acquired without `leaseMs`). */
  readonly renewing: boolean;
  /** True once `release()` has run to its end. */
  readonly released: boolean;
  /** Aborts (reason: a LockLostError) as soon as the hold is known to be lost. */
  readonly signal: AbortSignal;
  /** Re-arms the lease to `ms` from now. Throws LockNotHeldError when the hold is gone. */
  extend(ms: number): Promise<void>;
  /** Gives the hold up. Throws LockNotHeldError when it was already gone. */
  release(): Promise<void>;
}

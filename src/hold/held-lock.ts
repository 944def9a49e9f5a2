/// <reference lib="esnext.disposable" preserve="true" />
// The line above keeps this module's .d.ts self-contained for users whose lib lacks disposables.
/** What every handle honours, so that code taking "a held lock" (withLock…) works with any. */
export interface HeldLock extends AsyncDisposable {
  /** The lock's name (a MultiLock's: its members' names joined). */
  readonly name: string;
  readonly owner: string;
  /**
   * Grows with every new holder of the lock. Null for handles spanning several locks or
   * databases (MultiLock, RedLock): no single token guards them; use their `fencingTokens`.
   */
  readonly fencingToken: number | null;
  /** As acquired or last extended (watchdog mode: the watchdog timeout). */
  readonly leaseMs: number;
  /** The latest moment (client clock) the hold is surely trusted until, without renewal. */
  readonly expiresAt: number;
  /** A watchdog renews the hold (acquired without `leaseMs`). */
  readonly renewing: boolean;
  /** `release()` has run to its end. */
  readonly released: boolean;
  /** Aborts with a LockLostError as soon as the hold is known lost. */
  readonly signal: AbortSignal;
  /** Re-arms the lease to `ms` from now. Throws LockNotHeldError when the hold is gone. */
  extend(ms: number): Promise<void>;
  /** Gives the hold up. Throws LockNotHeldError when it was already gone. */
  release(): Promise<void>;
}

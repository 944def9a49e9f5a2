/** The seam between a held lock and what keeps its lease alive: timers or a Durable Object. */

/**
 * What a hold renewable from anywhere is, and so which extend script renews it: `"lock"`, the
 * lock hash of a reentrant, fair or write lock (`lock.extend`); `"semaphore"`, a permit hold in a
 * semaphore's leases (`semaphore.extend`).
 */
export type HoldKind = "lock" | "semaphore";

/** The hold a Renewer renews: its lock, owner, fencing token and lease, and how to extend it. */
export interface RenewalTarget {
  readonly name: string;
  readonly owner: string;
  /**
   * The hold's fencing token: renewals name it, so they never re-arm a later hold of the same
   * owner (after this one was force-released or ran out).
   */
  readonly fencingToken: number;
  /**
   * The Redis key of the hold, present only when its kind's extend script renews it from
   * anywhere (reentrant, fair and write locks; semaphore permits): the Durable Object watchdog
   * renews the others in process.
   */
  readonly key?: string;
  /**
   * What `key` holds, and so the script that renews it.
   * @default "lock"
   */
  readonly kind?: HoldKind;
  /** The lease each renewal sets, in ms (the client's watchdogTimeoutMs). */
  readonly leaseMs: number;
  /**
   * The lease at `confirmedAt` when shorter than `leaseMs`: a push hand-off's claim window, until
   * the hold's own lease is confirmed. Only in-process renewers see it (renew by half of it).
   * @default leaseMs
   */
  readonly firstLeaseMs?: number;
  /** Re-arms the lease: true when re-armed, false when the owner no longer holds the lock. */
  renew(): Promise<boolean>;
  /** Renewal has ended because the lock is lost. Called at most once. */
  lost(reason: string, cause?: unknown): void;
  /** One renewal attempt failed; renewal goes on. */
  failed(error: unknown): void;
}

/** One hold's renewal, as a Renewer started it: stopped when the hold is released. */
export interface Renewal {
  /** Stops renewing (after release). Idempotent. */
  stop(): void;
}

/**
 * The watchdog of watchdog-mode holds (the `watchdog` option): `inProcessRenewer()` (the
 * default) or `durableObjectWatchdog()`.
 */
export interface Renewer {
  /** Renewals run on this process's timers; a push hand-off confirms its claim on one too. */
  readonly inProcess?: boolean;
  /**
   * Starts renewing `target`, whose lease was last set at `confirmedAt` (client clock, taken
   * before the request that set it was sent).
   */
  start(target: RenewalTarget, confirmedAt: number): Renewal;
}

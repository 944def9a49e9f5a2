/** The seam between a held lock and what keeps its lease alive: timers or a Durable Object. */

export interface RenewalTarget {
  readonly name: string;
  readonly owner: string;
  /**
   * The hold's fencing token: renewals name it, so they never re-arm a later hold of the same
   * owner (after this one was force-released or ran out).
   */
  readonly fencingToken: number;
  /**
   * The lock's Redis key, present only when `lock.extend` on it renews the hold (reentrant, fair
   * and write locks): the Durable Object watchdog renews the others in process.
   */
  readonly key?: string;
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

export interface Renewal {
  /** Stops renewing (after release). Idempotent. */
  stop(): void;
}

export interface Renewer {
  /** Renewals run on this process's timers; a push hand-off confirms its claim on one too. */
  readonly inProcess?: boolean;
  /**
   * Starts renewing `target`, whose lease was last set at `confirmedAt` (client clock, taken
   * before the request that set it was sent).
   */
  start(target: RenewalTarget, confirmedAt: number): Renewal;
}

/**
 * The seam between a held lock and whatever keeps its lease alive: the in-process timer of this
 * module's sibling, or a Durable Object whose alarms renew it.
 */

export interface RenewalTarget {
  readonly name: string;
  readonly owner: string;
  /**
   * The hold's fencing token: every renewal names the hold it renews by it, so a renewal never
   * re-arms a later hold of the same owner (after this one was force-released or ran out).
   */
  readonly fencingToken: number;
  /**
   * The lock's Redis key `<prefix>:{<name>}`, present only when `lock.extend` on it renews the
   * hold (the reentrant, fair and write locks), so the Durable Object watchdog can re-arm it
   * elsewhere; without it, that watchdog renews in process. In-process renewal ignores it.
   */
  readonly key?: string;
  /** The lease each renewal sets, in ms (the client's watchdogTimeoutMs). */
  readonly leaseMs: number;
  /**
   * The lease the hold has at `confirmedAt` when it is shorter than `leaseMs`: a push hand-off
   * grants only its claim window until the hold's own lease is confirmed. An in-process renewer
   * renews by half of it and counts the hold lost at its end; a renewer elsewhere never sees such
   * a hold (the acquisition confirms it at once). Default: `leaseMs`.
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
  /**
   * True when renewals run on this process's timers (which Workers stop with the invocation);
   * a push hand-off then confirms its claim window on a timer too, else at once.
   */
  readonly inProcess?: boolean;
  /**
   * Starts renewing `target`, whose lease was last set at `confirmedAt` (client clock, taken
   * before the request that set it was sent).
   */
  start(target: RenewalTarget, confirmedAt: number): Renewal;
}

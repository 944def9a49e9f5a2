/** Every default of the library in one place; each option documents its own where declared. */

/** `LockClient` options. */
export const CLIENT_DEFAULTS = {
  prefix: "edgelock",
  /** Re-sends after an ambiguous failure, on top of the Redis client's own. */
  retries: 2,
  /** Pause before the first re-send; doubled each time. */
  retryDelayMs: 50,
  /** How long a mutating operation's result is kept for re-sent requests. */
  operationTtlMs: 60_000,
  /** Time budget of one call to Redis, all re-sends included, then LockBackendError. */
  backendTimeoutMs: 2_000,
  /** Lease of a hold without `leaseMs`, renewed every third of it by the watchdog. */
  watchdogTimeoutMs: 30_000,
} as const;

/** Queued waiters (fair lock, waiting writers). */
export const QUEUE_DEFAULTS = {
  /** A waiter that has not polled for this long is presumed dead. */
  waiterTimeoutMs: 5_000,
  /** Smallest allowed: a waiter polls every third of it and needs room for round trips. */
  minWaiterTimeoutMs: 1_000,
} as const;

/** RedLock options. */
export const QUORUM_DEFAULTS = {
  driftFactor: 0.01,
  driftMs: 2,
  responseTimeoutMs: 1_000,
  maxConcurrentRequests: 6,
} as const;

/** How a waiter polls when nothing else is known (see src/wait/policy.ts). */
export const WAIT_DEFAULTS = {
  initialDelayMs: 10,
  maxDelayMs: 250,
  /** A guard against a runaway loop, not a clock: an hour's wait on the defaults fits in it. */
  maxPolls: 10_000,
  /** How long a wait rides out transient backend failures in a row. */
  outageMs: 5_000,
  /** Push where a wake channel works (a blocking pop, or a subscription), else polling. */
  mode: "auto",
  /** Push mode: the longest one parking request (a blocking pop) waits. */
  parkMs: 5_000,
  /** Push mode: the lease a hand-off grants until the woken waiter confirms it. */
  claimMs: 2_000,
  /** Push mode: a blocking pop where pops block, else a subscription, else polling. */
  wakeBy: "auto",
} as const;

/** Bounds of the push-mode durations (see WaitOptions). */
export const PUSH_LIMITS = {
  minParkMs: 100,
  maxParkMs: 60_000,
  minClaimMs: 200,
  maxClaimMs: 60_000,
} as const;

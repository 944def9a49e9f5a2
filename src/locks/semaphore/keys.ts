/**
 * The keys of semaphore `name`: all under the hash tag `{<name>}`, so one script touches one
 * cluster slot and Upstash's per-key locking sees every key in KEYS. The suffixes keep them apart
 * from a lock of the same name.
 */
export interface SemaphoreKeys {
  /** String: the capacity (total permits). Set by trySetPermits/setPermits; never expires. */
  readonly capacity: string;
  /** Sorted set: hold (`<owner> <fencing token>`) → lease expiry (server ms). */
  readonly leases: string;
  /**
   * Hash: hold (as in `leases`) → `<permits> <server ms of the grant>`. Kept in step with
   * `leases`.
   */
  readonly counts: string;
  /** Counter of acquisitions: every hold's fencing token. Never expires, so tokens only grow. */
  readonly fence: string;
  /** Sorted set: waiting acquisition (`<owner> <operation id> <permits>`) → ticket (FIFO). */
  readonly queue: string;
  /** Sorted set: waiting acquisition (as in `queue`) → deadline (server ms), refreshed per poll. */
  readonly timeouts: string;
  /**
   * Hash: `hold`, the average ms from grant to release, so that waiters far back sleep until
   * near their turn. Expires an hour after the last release.
   */
  readonly pace: string;
  /** Record of one mutating operation's result, kept briefly to answer re-sent requests. */
  operation(id: string): string;
}

export function semaphoreKeys(prefix: string, name: string): SemaphoreKeys {
  const base = `${prefix}:{${name}}:semaphore`;
  return {
    capacity: `${base}:capacity`,
    leases: `${base}:leases`,
    counts: `${base}:counts`,
    fence: `${base}:fence`,
    queue: `${base}:queue`,
    timeouts: `${base}:timeouts`,
    pace: `${base}:pace`,
    operation: (id) => `${base}:op:${id}`,
  };
}

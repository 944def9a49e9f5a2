/**
 * Every Redis key layout of every lock kind, in one place. All keys of one lock share the hash
 * tag `{<name>}` so that one script touches one Redis Cluster slot (and Upstash's per-key script
 * locking sees every key in KEYS).
 */

/** Keys of a reentrant lock; the other exclusive kinds build on them. */
export interface LockKeys {
  /** Hash: owner token → hold count. Its TTL is the lease. */
  readonly lock: string;
  /** Counter of first acquisitions; never expires, so fencing tokens only grow. */
  readonly fence: string;
  /**
   * Hash: `at` (server ms of the current holder's first acquisition), `hold`, `dev`, `cycle`,
   * `rtt` (average ms: hold, its mean deviation, acquire → next acquire, waiters' round trip),
   * `for`, `for2`, `until` (a release's reservation: the two head waiters, till server ms).
   */
  readonly holdStats: string;
  /**
   * Sorted set: waiting acquisition (`<owner> <operation id>`, one place per acquisition, so two
   * tasks of one owner wait apart) → ticket (enqueue time in ms, strictly increasing).
   */
  readonly queue: string;
  /** Sorted set: waiting acquisition (as in `queue`) → deadline (server ms); refreshed at every poll. */
  readonly timeouts: string;
  /**
   * Hash: parked acquisition (push mode; as in `queue`) → `<claim ms> <lease ms> <operation id> <server ms of its
   * latest registration>`: what a release needs to hand it the lock.
   */
  readonly parked: string;
  /** Record of one mutating operation's result, kept briefly to answer re-sent requests. */
  operation(id: string): string;
  /**
   * List a parked waiter blocks on, one per acquisition (its operation id), so that a park
   * abandoned by an earlier acquisition of the same owner never takes its grant. The release
   * script derives it and the operation record from the lock key (`<lock>:wake:<id>`,
   * `<lock>:op:<id>`: handOffToParkedHead in queue/hand-off.ts), as these lines do; so the
   * hand-off is cut out of the scripts sent with Upstash's key-locking flag.
   */
  wake(id: string): string;
}

/** Keys of lock `name` under `prefix`; both were validated (no braces). */
export function lockKeys(prefix: string, name: string): LockKeys {
  const base = `${prefix}:{${name}}`;
  return {
    lock: base,
    fence: `${base}:fence`,
    holdStats: `${base}:holds`,
    queue: `${base}:queue`,
    timeouts: `${base}:timeouts`,
    parked: `${base}:parked`,
    operation: (id) => `${base}:op:${id}`,
    wake: (id) => `${base}:wake:${id}`,
  };
}

/** A fair lock has the plain lock's keys: the same queue, only its acquire rule differs. */
export type FairLockKeys = LockKeys;

export const fairLockKeys = lockKeys;

/**
 * A read-write lock. The write side is a reentrant lock's hash (owner → write holds, its TTL the
 * write lease), so the write lock extends, releases and inspects like one. Read holds live apart,
 * each with its own expiry.
 */
export interface ReadWriteLockKeys extends LockKeys {
  /** Sorted set: read hold (`<owner> <hold id>`) → expiry (server ms). */
  readonly reads: string;
  /** Hash: owner → number of its read holds. Kept in step with `reads`. */
  readonly readers: string;
  /** Sorted set: waiting writer acquisition (as in `queue`) → deadline (server ms), for writer preference. */
  readonly writers: string;
}

export function readWriteLockKeys(prefix: string, name: string): ReadWriteLockKeys {
  const keys = lockKeys(prefix, name);
  return {
    ...keys,
    reads: `${keys.lock}:reads`,
    readers: `${keys.lock}:readers`,
    writers: `${keys.lock}:writers`,
  };
}

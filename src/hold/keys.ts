/**
 * Every key layout, in one place. A lock's keys share the hash tag `{<name>}`: one Cluster slot
 * per script, and Upstash's per-key script locking sees every key in KEYS.
 */

/** A reentrant lock's; the other exclusive kinds build on them. */
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
  /** Sorted set: waiting acquisition (as in `queue`) → deadline (server ms), refreshed by polls. */
  readonly timeouts: string;
  /**
   * Hash: parked acquisition (as in `queue`) → `<claim ms> <lease ms> <operation id> <server ms
   * of its latest registration> <server ms its park ends by>[ sub<n>.<k>]`: what a release needs
   * to hand it the lock (` sub<n>.<k>`: it listens on `handOffChannels[k]`, registered by its
   * attempt number n); after a hand-off announced there, `granted <fence>` until its next attempt
   * takes it or it expires (see `grants`).
   */
  readonly parked: string;
  /**
   * Pub/sub channels, HAND_OFF_SHARDS of them (not keys, but declared in KEYS like ones): a
   * release announces a hand-off on the channel its waiter registered with (`<operation id>
   * grant …`, `<operation id> behind …`; see queue/hand-off.ts), so a word reaches the streams of
   * one shard of the waiters, not all of them.
   */
  readonly handOffChannels: readonly string[];
  /**
   * List of `<server ms it expires> <waiter>`, oldest first: the announced grants whose
   * `granted <fence>` records in `parked` are kept as long as an operation record.
   */
  readonly grants: string;
  /** One mutating operation's result, kept briefly to answer re-sent requests. */
  operation(id: string): string;
  /**
   * List a parked waiter blocks on, one per acquisition, so that a park abandoned by an earlier
   * acquisition of the owner never takes its grant. The release script derives it and `op` from
   * the lock key as these lines do (handOffToParkedHead in queue/hand-off.ts), which is why the
   * hand-off is cut out of scripts sent with Upstash's key-locking flag.
   */
  wake(id: string): string;
}

/**
 * Hand-off channels per lock: a word reaches about 1/HAND_OFF_SHARDS of the subscribed waiters.
 * Every script that may hand off declares them all (HAND_OFF_CHANNEL_KEYS), as Upstash's
 * key-locking flag wants.
 */
export const HAND_OFF_SHARDS = 8;

/** `prefix` and `name` were validated (no braces). */
export function lockKeys(prefix: string, name: string): LockKeys {
  const base = `${prefix}:{${name}}`;
  return {
    lock: base,
    fence: `${base}:fence`,
    holdStats: `${base}:holds`,
    queue: `${base}:queue`,
    timeouts: `${base}:timeouts`,
    parked: `${base}:parked`,
    handOffChannels: Array.from(
      { length: HAND_OFF_SHARDS },
      (_, shard) => `${base}:hand-offs:${shard}`,
    ),
    grants: `${base}:grants`,
    operation: (id) => `${base}:op:${id}`,
    wake: (id) => `${base}:wake:${id}`,
  };
}

/** The plain lock's: the same queue, only the acquire rule differs. */
export type FairLockKeys = LockKeys;

export const fairLockKeys = lockKeys;

/**
 * The write side is a reentrant lock's hash, so the write lock extends, releases and inspects
 * like one; read holds live apart, each with its own expiry.
 */
export interface ReadWriteLockKeys extends LockKeys {
  /** Sorted set: read hold (`<owner> <hold id>`) → expiry (server ms). */
  readonly reads: string;
  /** Hash: owner → number of its read holds, in step with `reads`. */
  readonly readers: string;
  /** Sorted set: waiting writer (as in `queue`) → deadline (server ms), for writer preference. */
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

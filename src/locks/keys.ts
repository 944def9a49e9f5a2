/**
 * Redis keys of one lock. All share the hash tag `{<name>}` so that one script touches one
 * Redis Cluster slot (and Upstash's per-key script locking sees every key in KEYS).
 */
export interface LockKeys {
  /** Hash: owner token → hold count. Its TTL is the lease. */
  readonly lock: string;
  /** Counter of first acquisitions; never expires, so fencing tokens only grow. */
  readonly fence: string;
  /** Record of one mutating operation's result, kept briefly to answer re-sent requests. */
  operation(id: string): string;
}

/** Keys of lock `name` under `prefix`; both were validated (no braces). */
export function lockKeys(prefix: string, name: string): LockKeys {
  const base = `${prefix}:{${name}}`;
  return {
    lock: base,
    fence: `${base}:fence`,
    operation: (id) => `${base}:op:${id}`,
  };
}

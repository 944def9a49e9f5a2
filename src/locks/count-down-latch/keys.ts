import { subscribableChannel } from "../../hold/script.js";
/** The keys of count-down latch `name`, under the hash tag `{<name>}`. */
export interface LatchKeys {
  /** String: the count. Deleted at 0; expires with the latch's TTL if nobody counts it down. */
  readonly count: string;
  /**
   * Pub/sub channel (not a key, declared in KEYS all the same: Upstash's key-locking rule):
   * `opened` is published on it when a countDown reaches 0, for awaits in push mode.
   */
  readonly opened: string;
  /** Record of one mutating operation's result, kept briefly to answer re-sent requests. */
  operation(id: string): string;
}

export function latchKeys(prefix: string, name: string): LatchKeys {
  const base = `${prefix}:{${name}}:latch`;
  return {
    count: base,
    opened: subscribableChannel(`${base}:opened`),
    operation: (id) => `${base}:op:${id}`,
  };
}

/** The keys of count-down latch `name`, under the hash tag `{<name>}`. */
export interface LatchKeys {
  /** String: the count. Deleted at 0; expires with the latch's TTL if nobody counts it down. */
  readonly count: string;
  /** Record of one mutating operation's result, kept briefly to answer re-sent requests. */
  operation(id: string): string;
}

export function latchKeys(prefix: string, name: string): LatchKeys {
  const base = `${prefix}:{${name}}:latch`;
  return { count: base, operation: (id) => `${base}:op:${id}` };
}

/**
 * The keys of semaphore `name`: all under the hash tag `{<name>}`, so one script touches one
 * cluster slot and Upstash's per-key locking sees every key in KEYS. The suffixes keep them apart
 * from a lock of the same name.
 */
import { HAND_OFF_SHARDS, subscribableChannel } from "../../hold/script.js";

export interface SemaphoreKeys {
  /** String: the capacity (total permits). Set by trySetPermits/setPermits; never expires. */
  readonly capacity: string;
  /**
   * Hash: hold (`<owner> <fencing token>`) → `<permits> <server ms of the grant> <server ms its
   * lease ends>` (the grant `-` where unknown), or `<permits>` alone: the only hold, taken when
   * nothing else was held or waited for, whose lease is this key's TTL (its taking and its
   * release read no clock). The key lives until the last lease ends; a script that adds a hold
   * beside a short entry writes that entry out in full first (see lua.ts).
   */
  readonly leases: string;
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
  /**
   * Hash: waiter (as in `queue`) parked on a hand-off channel → its registration, as a lock's
   * (LockKeys.parked): `<claim ms> <lease ms> <operation id> <server ms of the registration>
   * <server ms its park ends by> sub<n>.<k>` (see permitParkBoundMs); after a hand-off,
   * `granted <fence> <server ms>` until its next attempt takes it or its hold's release clears
   * it (recordAnnouncedGrant in hold/queue/hand-off.ts).
   */
  readonly parked: string;
  /**
   * Pub/sub channels, HAND_OFF_SHARDS of them, declared in KEYS like keys: a release that grants
   * permits to a parked waiter announces it on the channel of the waiter's shard.
   */
  readonly handOffChannels: readonly string[];
  /** Record of one mutating operation's result, kept briefly to answer re-sent requests. */
  operation(id: string): string;
}

export function semaphoreKeys(prefix: string, name: string): SemaphoreKeys {
  const base = `${prefix}:{${name}}:semaphore`;
  return {
    capacity: `${base}:capacity`,
    leases: `${base}:leases`,
    fence: `${base}:fence`,
    queue: `${base}:queue`,
    timeouts: `${base}:timeouts`,
    pace: `${base}:pace`,
    parked: `${base}:parked`,
    handOffChannels: Array.from({ length: HAND_OFF_SHARDS }, (_, shard) =>
      subscribableChannel(`${base}:hand-offs:${shard}`),
    ),
    operation: (id) => `${base}:op:${id}`,
  };
}

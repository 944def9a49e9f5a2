/**
 * What the server says, not what the client believes: the state of lock keys read in one script
 * per database through the fault-free observer (so atomic, and never faulted), and the sampler
 * that reads it every few milliseconds while a chaos run goes on. The invariants compare the
 * clients' beliefs with these samples.
 */
import type { Redis } from "@upstash/redis";
import { sleep as sleepMs } from "../../src/platform.js";
import { Script } from "../../src/transport/call.js";

export type HoldMode = "exclusive" | "shared";

/** One key's state at one instant of the server. */
export interface KeyState {
  /** Owners holding the key, and how. */
  readonly holders: ReadonlyMap<string, HoldMode>;
  /** Waiting owners → ticket of their earliest waiting acquisition (a fair lock's queue). */
  readonly queue: ReadonlyMap<string, number>;
  /** Waiting owners whose deadline had passed (the server may prune them at any time). */
  readonly stale: ReadonlySet<string>;
  /** The fencing counter (grants so far), where the layout names it. */
  readonly fence?: number;
  /**
   * A counter of grants that is not one holder's token (a semaphore's: concurrent holders each
   * have their own), where the layout names it: a change between two readings means a grant.
   */
  readonly granted?: number;
  /** A semaphore's live holds, by owner: their fencing tokens (each hold has its own). */
  readonly tokens?: ReadonlyMap<string, readonly number[]>;
  /** A semaphore's capacity, where the layout names it (0: unset). */
  readonly capacity?: number;
  /** A semaphore's live holds with their permits and grant time (server ms), where named. */
  readonly permitHolds?: readonly PermitHold[];
  /** A semaphore's waiting acquisitions in ticket order with their permits, where named. */
  readonly waiting?: readonly { readonly owner: string; readonly permits: number }[];
  /** The server's clock at the reading (ms). */
  readonly serverAt?: number;
}

/** One live semaphore hold as the server has it. */
export interface PermitHold {
  readonly owner: string;
  readonly token: number;
  readonly permits: number;
  /**
   * Server ms of its grant (kept from the grant on: renewals do not move it); null where the
   * server did not record it (a hold taken while nothing else was held or waited for).
   */
  readonly grantedAt: number | null;
}

/** One reading of the server: sent and answered between `sentAt` and `answeredAt` (client ms). */
export interface Sample {
  readonly sentAt: number;
  readonly answeredAt: number;
  readonly states: ReadonlyMap<string, KeyState>;
}

/** The Redis keys that make up one workload key's state on one database. */
export interface KeyLayout {
  readonly key: string;
  /** Hash owner → hold count: exclusive holders. Absent for a semaphore (`leases`). */
  readonly hash?: string;
  /**
   * Hash `<owner> <hold id>` → `<permits> <server ms of the grant, or -> <expiry, server ms>`,
   * or `<permits>` alone for a sole hold whose expiry is the key's TTL: holds that each take a
   * place of the key's capacity while their lease runs (a semaphore's permits), shown as
   * exclusive.
   */
  readonly leases?: string;
  /** Sorted set `<owner> <hold id>` → expiry (server ms): shared holders (read holds). */
  readonly reads?: string;
  /** Sorted set `<owner> <operation id>` → ticket: waiting acquisitions. */
  readonly queue?: string;
  /** Sorted set `<owner> <operation id>` → deadline (server ms): waiters' liveness. */
  readonly timeouts?: string;
  /** The fencing counter. */
  readonly fence?: string;
  /** A counter of grants that is not the latest holder's token (KeyState.granted). */
  readonly granted?: string;
  /** A semaphore's capacity (string). */
  readonly capacity?: string;
}

// KEYS: the keys to read; ARGV[i]: 'h' (HGETALL), 'p' (HGETALL, then PTTL), 'z' (ZRANGE
// WITHSCORES) or 'g' (GET).
// Reply: {seconds, microseconds, dump of KEYS[1], dump of KEYS[2], ...}.
const SNAPSHOT = new Script(
  "chaos.snapshot",
  `local time = redis.call('TIME')
local reply = {time[1], time[2]}
for i = 1, #KEYS do
  if ARGV[i] == 'h' then
    reply[#reply + 1] = redis.call('HGETALL', KEYS[i])
  elseif ARGV[i] == 'p' then
    reply[#reply + 1] = {redis.call('HGETALL', KEYS[i]), redis.call('PTTL', KEYS[i])}
  elseif ARGV[i] == 'g' then
    reply[#reply + 1] = redis.call('GET', KEYS[i]) or '0'
  else
    reply[#reply + 1] = redis.call('ZRANGE', KEYS[i], 0, -1, 'WITHSCORES')
  end
end
return reply`,
);

function pairs(dump: unknown): [string, string][] {
  if (!Array.isArray(dump)) return [];
  const result: [string, string][] = [];
  for (let i = 0; i + 1 < dump.length; i += 2) result.push([String(dump[i]), String(dump[i + 1])]);
  return result;
}

/** Reads `layouts` on one database in one script call (`raw`: a client that parses nothing). */
export async function readKeys(
  raw: Redis,
  layouts: readonly KeyLayout[],
): Promise<Map<string, KeyState>> {
  const keys: string[] = [];
  const kinds: string[] = [];
  for (const layout of layouts) {
    if (layout.hash !== undefined) {
      keys.push(layout.hash);
      kinds.push("h");
    }
    if (layout.leases !== undefined) {
      keys.push(layout.leases);
      kinds.push("p");
    }
    for (const zset of [layout.reads, layout.queue, layout.timeouts]) {
      if (zset === undefined) continue;
      keys.push(zset);
      kinds.push("z");
    }
    for (const counter of [layout.fence, layout.granted, layout.capacity]) {
      if (counter === undefined) continue;
      keys.push(counter);
      kinds.push("g");
    }
  }
  const reply = await SNAPSHOT.run(raw, keys, kinds);
  if (!Array.isArray(reply) || reply.length !== keys.length + 2) {
    throw new Error("chaos: unexpected snapshot reply");
  }
  const serverMs = Number(reply[0]) * 1000 + Number(reply[1]) / 1000;
  let next = 2;
  const states = new Map<string, KeyState>();
  for (const layout of layouts) {
    const holders = new Map<string, HoldMode>();
    if (layout.hash !== undefined) {
      for (const [owner, count] of pairs(reply[next++]))
        if (Number(count) > 0) holders.set(owner, "exclusive");
    }
    const tokens = new Map<string, number[]>();
    const permitHolds: PermitHold[] = [];
    if (layout.leases !== undefined) {
      const [entries, ttl] = Array.isArray(reply[next]) ? (reply[next] as unknown[]) : [];
      next++;
      for (const [member, entry] of pairs(entries)) {
        const [permits, grantedAt, end] = entry.split(" ");
        // A sole hold's entry is its permits alone: its lease is the key's TTL.
        const expiry = end === undefined ? serverMs + Number(ttl) : Number(end);
        if (expiry <= serverMs) continue;
        const [owner, token] = member.split(" ");
        holders.set(owner!, "exclusive");
        tokens.set(owner!, [...(tokens.get(owner!) ?? []), Number(token)]);
        permitHolds.push({
          owner: owner!,
          token: Number(token),
          permits: Number(permits),
          grantedAt: grantedAt === undefined || grantedAt === "-" ? null : Number(grantedAt),
        });
      }
    }
    if (layout.reads !== undefined) {
      for (const [member, expiry] of pairs(reply[next++])) {
        const owner = member.split(" ")[0]!;
        if (Number(expiry) > serverMs && !holders.has(owner)) holders.set(owner, "shared");
      }
    }
    const queue = new Map<string, number>();
    const waiting: { owner: string; permits: number; ticket: number }[] = [];
    if (layout.queue !== undefined) {
      // A member is one acquisition (`<owner> <operation id>[ <permits>]`): an owner's earliest
      // place.
      for (const [member, ticket] of pairs(reply[next++])) {
        const parts = member.split(" ");
        const owner = parts[0]!;
        queue.set(owner, Math.min(Number(ticket), queue.get(owner) ?? Number.POSITIVE_INFINITY));
        const permits = parts.length > 2 ? Number(parts[parts.length - 1]) : 1;
        waiting.push({ owner, permits, ticket: Number(ticket) });
      }
      waiting.sort((a, b) => a.ticket - b.ticket);
    }
    const stale = new Set<string>();
    if (layout.timeouts !== undefined) {
      for (const [member, deadline] of pairs(reply[next++])) {
        if (Number(deadline) <= serverMs) stale.add(member.split(" ")[0]!);
      }
    }
    const fence = layout.fence === undefined ? undefined : Number(reply[next++]);
    const granted = layout.granted === undefined ? undefined : Number(reply[next++]);
    const capacity = layout.capacity === undefined ? undefined : Number(reply[next++]);
    states.set(layout.key, {
      holders,
      queue,
      stale,
      ...(fence === undefined ? {} : { fence }),
      ...(granted === undefined ? {} : { granted }),
      ...(layout.leases === undefined ? {} : { tokens }),
      ...(capacity === undefined ? {} : { capacity, waiting, serverAt: serverMs }),
      ...(layout.leases === undefined ? {} : { permitHolds }),
    });
  }
  return states;
}

export interface Sampler {
  /** Samples taken so far (read after `stop()`). */
  readonly samples: readonly Sample[];
  /** Readings that failed (the observer is fault-free: should stay 0). */
  readonly failures: number;
  stop(): Promise<void>;
}

/** Reads `keys` every `intervalMs` until stopped. */
export function startSampler(
  read: (keys: readonly string[]) => Promise<ReadonlyMap<string, KeyState>>,
  keys: readonly string[],
  intervalMs: number,
): Sampler {
  const samples: Sample[] = [];
  let failures = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const sentAt = Date.now();
      try {
        const states = await read(keys);
        samples.push({ sentAt, answeredAt: Date.now(), states });
      } catch {
        failures += 1;
      }
      await sleepMs(intervalMs);
    }
  })();
  return {
    samples,
    get failures() {
      return failures;
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

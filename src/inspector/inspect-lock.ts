/**
 * Reads one lock's whole state in one read-only script (one billed command); owner tokens are
 * digested before the state leaves this module.
 */
import { readWriteLockKeys } from "../hold/script.js";
import { type CommandCounter, type ExecRedis, ReadScript } from "./redis.js";
import { decodeState, digest, list, msUntil, numberOrNull, splitMember } from "./reply.js";
import type {
  InspectedHolder,
  InspectedLock,
  InspectedReadHold,
  InspectedWaiter,
} from "./types.js";

/** Every key of lock `name` the inspector reads, in the script's KEYS order. */
export function inspectedKeys(prefix: string, name: string): string[] {
  const keys = readWriteLockKeys(prefix, name);
  return [
    keys.lock,
    keys.fence,
    keys.holdStats,
    keys.queue,
    keys.timeouts,
    keys.parked,
    keys.reads,
    keys.writers,
  ];
}

// KEYS: 1 lock hash, 2 fence, 3 hold statistics, 4 queue, 5 queue deadlines, 6 parked waiters,
//       7 read holds, 8 waiting writers (src/hold/script.ts)
// ARGV: 1 how many waiters and read holds to list
// Reply: one JSON object (cjson), so the REST client hands it over parsed.
export const READ_LOCK = new ReadScript(
  "inspector.readLock",
  `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max = tonumber(ARGV[1])
local queue = redis.call('ZRANGE', KEYS[4], 0, max - 1, 'WITHSCORES')
local deadlines, parked = {}, {}
for i = 1, #queue, 2 do
  deadlines[#deadlines + 1] = redis.call('ZSCORE', KEYS[5], queue[i]) or ''
  parked[#parked + 1] = redis.call('HEXISTS', KEYS[6], queue[i])
end
return cjson.encode({
  now = now,
  pttl = redis.call('PTTL', KEYS[1]),
  holders = redis.call('HGETALL', KEYS[1]),
  fence = redis.call('GET', KEYS[2]) or '',
  stats = redis.call('HMGET', KEYS[3], 'at', 'hold', 'cycle', 'timed'),
  queued = redis.call('ZCARD', KEYS[4]),
  queue = queue, deadlines = deadlines, parked = parked,
  readCount = redis.call('ZCARD', KEYS[7]),
  reads = redis.call('ZRANGE', KEYS[7], 0, max - 1, 'WITHSCORES'),
  writers = redis.call('ZCARD', KEYS[8])
})`,
);

interface RawLockState {
  now: number;
  pttl: number;
  holders: unknown[];
  fence: string | number;
  stats: unknown[];
  queued: number;
  queue: unknown[];
  deadlines: unknown[];
  parked: unknown[];
  readCount: number;
  reads: unknown[];
  writers: number;
}

function parseState(reply: unknown): RawLockState {
  const raw = decodeState(reply, "lock");
  return {
    now: raw.now,
    pttl: Number(raw.pttl),
    holders: list(raw.holders),
    fence: (raw.fence as string | number) ?? "",
    stats: list(raw.stats),
    queued: Number(raw.queued),
    queue: list(raw.queue),
    deadlines: list(raw.deadlines),
    parked: list(raw.parked),
    readCount: Number(raw.readCount),
    reads: list(raw.reads),
    writers: Number(raw.writers),
  };
}

/** Reads lock `name`; resolves to its state and the server time of the read. */
export async function readLock(
  redis: ExecRedis,
  prefix: string,
  name: string,
  maxListed: number,
  counter: CommandCounter,
): Promise<{ lock: InspectedLock; now: number }> {
  const reply = await READ_LOCK.run(
    redis,
    inspectedKeys(prefix, name),
    [String(maxListed)],
    counter,
  );
  const raw = parseState(reply);
  const holders: InspectedHolder[] = [];
  for (let i = 0; i + 1 < raw.holders.length; i += 2) {
    holders.push({
      owner: await digest(String(raw.holders[i])),
      holds: Number(raw.holders[i + 1]),
    });
  }
  const waiters: InspectedWaiter[] = [];
  for (let i = 0; i + 1 < raw.queue.length; i += 2) {
    const member = String(raw.queue[i]);
    const deadline = numberOrNull(raw.deadlines[i / 2]);
    waiters.push({
      position: i / 2 + 1,
      owner: await digest(splitMember(member).owner),
      waiter: await digest(member),
      waitingSince: Math.floor(Number(raw.queue[i + 1])),
      deadlineInMs: deadline === null ? null : msUntil(deadline, raw.now),
      mode: Number(raw.parked[i / 2]) === 1 ? "parked" : "polling",
    });
  }
  const readHolds: InspectedReadHold[] = [];
  for (let i = 0; i + 1 < raw.reads.length; i += 2) {
    readHolds.push({
      owner: await digest(splitMember(String(raw.reads[i])).owner),
      leaseLeftMs: msUntil(raw.reads[i + 1], raw.now),
    });
  }
  const held = holders.length > 0 || raw.readCount > 0;
  const lock: InspectedLock = {
    name,
    kind: raw.readCount > 0 || raw.writers > 0 ? "read-write" : "lock",
    state: held ? "held" : raw.queued > 0 ? "waiting" : "free",
    holders,
    leaseLeftMs: holders.length > 0 && raw.pttl >= 0 ? raw.pttl : null,
    fencingToken: numberOrNull(raw.fence),
    // Only a timed hold (its token in `timed`) has its start in `at`: an uncontended one, taken
    // on the fast path, leaves an older hold's there.
    heldSince:
      holders.length > 0 && String(raw.stats[3]) === String(raw.fence)
        ? numberOrNull(raw.stats[0])
        : null,
    averageHoldMs: numberOrNull(raw.stats[1]),
    averageCycleMs: numberOrNull(raw.stats[2]),
    readHolds,
    readHoldCount: raw.readCount,
    waiters,
    waiterCount: raw.queued,
    waitingWriters: raw.writers,
  };
  return { lock, now: raw.now };
}

/**
 * Reads one semaphore's whole state in one read-only script (one billed command): capacity,
 * live holds and live waiters by server time, as `semaphore.state()` counts them; owner tokens
 * are digested before the state leaves this module.
 */
import { SERVER_NOW_MS } from "../hold/lua.js";
import { scriptHeader } from "../hold/script.js";
import { semaphoreKeys } from "../locks/semaphore/keys.js";
import { loadHolds } from "../locks/semaphore/lua.js";
import { type CommandCounter, type ExecRedis, ReadScript } from "./redis.js";
import { decodeState, digest, list, msUntil, numberOrNull, ownerOf } from "./reply.js";
import type { InspectedPermitHold, InspectedPermitWaiter, InspectedSemaphore } from "./types.js";

// Holds live while their lease is after `now`, waiters while their deadline is (a script that
// prunes would drop the others first). Reply: one JSON object (cjson), as inspector.readLock's.
export const READ_SEMAPHORE = new ReadScript(
  "inspector.readSemaphore",
  `${scriptHeader(
    ["capacityKey", "leasesKey", "fenceKey", "queueKey", "timeoutsKey", "paceKey"],
    ["listed"],
  )}
${SERVER_NOW_MS}
local max = tonumber(listed)
${loadHolds("leasesKey", false)}
local live = {}
for hold, entry in pairs(holds) do live[#live + 1] = {hold, entry[3], entry[1], entry[2]} end
table.sort(live, function(a, b) return a[2] < b[2] end)
local holdCount, listedHolds = #live, {}
for i = 1, math.min(max, holdCount) do listedHolds[i] = live[i] end
local queue = redis.call('ZRANGE', queueKey, 0, -1, 'WITHSCORES')
local waiters = {}
for i = 1, #queue, 2 do
  if #waiters >= max then break end
  local deadline = tonumber(redis.call('ZSCORE', timeoutsKey, queue[i]) or '0')
  if deadline > now then waiters[#waiters + 1] = {queue[i], queue[i + 1], deadline} end
end
return cjson.encode({
  now = now,
  capacity = redis.call('GET', capacityKey) or '',
  held = held, holdCount = holdCount, holds = listedHolds,
  waiterCount = redis.call('ZCOUNT', timeoutsKey, now + 1, '+inf'), waiters = waiters,
  fence = redis.call('GET', fenceKey) or '',
  averageHold = redis.call('HGET', paceKey, 'hold') or ''
})`,
);

/** The number a member ends with (`<owner> … <n>`). */
const lastNumber = (member: string): number => Number(member.slice(member.lastIndexOf(" ") + 1));

/** Reads semaphore `name`; resolves to null when it does not exist (no capacity, hold or waiter). */
export async function readSemaphore(
  redis: ExecRedis,
  prefix: string,
  name: string,
  maxListed: number,
  counter: CommandCounter,
): Promise<{ semaphore: InspectedSemaphore | null; now: number }> {
  const keys = semaphoreKeys(prefix, name);
  const raw = decodeState(
    await READ_SEMAPHORE.run(
      redis,
      [keys.capacity, keys.leases, keys.fence, keys.queue, keys.timeouts, keys.pace],
      [String(maxListed)],
      counter,
    ),
    "semaphore",
  );
  const { now } = raw;
  const holds: InspectedPermitHold[] = [];
  for (const hold of list(raw.holds).map(list)) {
    // {`<owner> <fencing token>`, lease end, permits, server ms of the grant ('-': unknown)}.
    const member = String(hold[0]);
    holds.push({
      owner: await digest(ownerOf(member)),
      permits: Number(hold[2]),
      fencingToken: lastNumber(member),
      leaseLeftMs: msUntil(hold[1], now),
      heldSince: numberOrNull(hold[3]),
    });
  }
  const waiters: InspectedPermitWaiter[] = [];
  for (const waiter of list(raw.waiters).map(list)) {
    // The member is `<owner> <operation id> <permits>`, its score the ticket (server ms).
    const member = String(waiter[0]);
    waiters.push({
      position: waiters.length + 1,
      owner: await digest(ownerOf(member)),
      permits: lastNumber(member),
      waitingSince: Math.floor(Number(waiter[1])),
      deadlineInMs: msUntil(waiter[2], now),
    });
  }
  const capacity = numberOrNull(raw.capacity);
  const heldPermits = Number(raw.held);
  const holdCount = Number(raw.holdCount);
  const waiterCount = Number(raw.waiterCount);
  if (capacity === null && holdCount === 0 && waiterCount === 0) return { semaphore: null, now };
  return {
    semaphore: {
      name,
      state: holdCount > 0 ? "held" : waiterCount > 0 ? "waiting" : "free",
      capacity,
      available: Math.max(0, (capacity ?? 0) - heldPermits),
      heldPermits,
      holds,
      holdCount,
      waiters,
      waiterCount,
      fencingToken: numberOrNull(raw.fence),
      averageHoldMs: numberOrNull(raw.averageHold),
    },
    now,
  };
}

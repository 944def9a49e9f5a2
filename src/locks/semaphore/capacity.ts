/**
 * The semaphore's capacity, which lives in Redis (as Redisson's RSemaphore keeps its permits
 * there), and its state. Capacity is the total number of permits; what is available is the
 * capacity less the permits of live holds, never below 0. Changing it never touches a hold:
 * holders keep their leases when it shrinks below what they hold, and nobody new gets in until
 * the holds fit again. Each change is exactly-once under re-sends (an operation record).
 */
import type { OperationContext } from "../../hold/context.js";
import { SERVER_NOW_MS } from "../../hold/lua.js";
import { defineScript, runScript } from "../../hold/script.js";
import {
  grantToParkedWaiters,
  PERMIT_HAND_OFF_KEYS,
  permitHandOffKeys,
  tellWaitersThatCannotFit,
} from "./hand-off.js";
import type { SemaphoreKeys } from "./keys.js";
import { loadHolds } from "./lua.js";

/** How a capacity change applies its number. */
export type CapacityChange = "trySet" | "set" | "add" | "drain";

// KEYS: 1 capacity, 2 holds (SemaphoreKeys.leases), 3 operation record, then PERMIT_HAND_OFF_KEYS (fence,
//       queue, timeouts, parked waiters, the hand-off channels)
// ARGV: 1 change ("trySet": set n when no capacity is set, however many permits are available;
//       "set": set n; "add": add n, no capacity counting as 0; "drain": lower the capacity to
//       what live holds have, taking every available permit), 2 n, 3 operation record ttl ms
// Reply: {1, value} done (trySet/set/add: the capacity now; drain: permits taken);
//        {0, capacity} trySet found a capacity set; {-1, capacity} add would make it negative.
// A re-send replays the first answer. A capacity set, added to or drained grants what is free to
// parked waiters (grantToParkedWaiters); one lowered first tells the parked waiters that ask more
// than it to ask again (tellWaitersThatCannotFit), which fails them at once.
export const SEMAPHORE_CAPACITY = defineScript({
  name: "semaphore.capacity",
  keys: ["capacityKey", "leasesKey", "operationKey", ...PERMIT_HAND_OFF_KEYS],
  args: ["change", "n", "operationTtlMs"],
  replies: { 1: [2], 0: [2], [-1]: [2] },
  lua: `local replay = redis.call('GET', operationKey)
if replay then return cjson.decode(replay) end
${SERVER_NOW_MS}
local function answer(status, value)
  redis.call('SET', operationKey, cjson.encode({status, value}), 'PX', operationTtlMs)
  return {status, value}
end
${loadHolds("leasesKey", true)}
local capacity = tonumber(redis.call('GET', capacityKey) or '-1')
local n = tonumber(n)
if change == 'trySet' then
  if capacity >= 0 then return answer(0, capacity) end
  redis.call('SET', capacityKey, n)
  return answer(1, n)
end
local total, value = n, n
if change == 'add' then
  total = math.max(0, capacity) + n
  if total < 0 then return answer(-1, math.max(0, capacity)) end
  value = total
elseif change == 'drain' then
  if capacity < 0 then return answer(1, 0) end
  value = math.max(0, capacity - held)
  total = capacity - value
end
redis.call('SET', capacityKey, total)
if total < capacity then
  ${tellWaitersThatCannotFit()}
end
${grantToParkedWaiters()}
return answer(1, value)`,
});

export type CapacityResult =
  | { readonly done: true; readonly value: number }
  | { readonly done: false; readonly capacity: number };

export async function changeCapacity(
  ctx: OperationContext,
  keys: SemaphoreKeys,
  change: CapacityChange,
  n: number,
  operationId: string,
): Promise<CapacityResult> {
  const [status, value] = await runScript(
    ctx,
    SEMAPHORE_CAPACITY,
    {
      capacityKey: keys.capacity,
      leasesKey: keys.leases,
      operationKey: keys.operation(operationId),
      ...permitHandOffKeys(keys),
    },
    { change, n, operationTtlMs: ctx.operationTtlMs },
  );
  return status === 1 ? { done: true, value: value ?? 0 } : { done: false, capacity: value ?? 0 };
}

// KEYS: 1 capacity, 2 holds (SemaphoreKeys.leases), 3 waiter deadlines. ARGV: none.
// Reply: {capacity (-1: none set), permits held by live holds, live holds, live waiters}.
// Reads only: a hold whose lease has passed is not counted, whether or not it was pruned yet.
export const SEMAPHORE_STATE = defineScript({
  name: "semaphore.state",
  keys: ["capacityKey", "leasesKey", "timeoutsKey"],
  args: [],
  replies: "count",
  lua: `${SERVER_NOW_MS}
${loadHolds("leasesKey", false)}
local live = 0
for _ in pairs(holds) do live = live + 1 end
return {tonumber(redis.call('GET', capacityKey) or '-1'), held, live,
  redis.call('ZCOUNT', timeoutsKey, now + 1, '+inf')}`,
});

/** What one read of the semaphore finds. */
export interface SemaphoreState {
  /** Total permits; null when none was set. */
  readonly capacity: number | null;
  /** Permits of live holds (lease not passed). */
  readonly held: number;
  /** Live holds (acquisitions). */
  readonly holds: number;
  /** Capacity less held, never below 0. */
  readonly available: number;
  /** Live waiters in the queue. */
  readonly waiters: number;
}

export async function readSemaphore(
  ctx: OperationContext,
  keys: SemaphoreKeys,
): Promise<SemaphoreState> {
  const [capacity = -1, held = 0, holds = 0, waiters = 0] = await runScript(
    ctx,
    SEMAPHORE_STATE,
    {
      capacityKey: keys.capacity,
      leasesKey: keys.leases,
      timeoutsKey: keys.timeouts,
    },
    {},
  );
  return {
    capacity: capacity < 0 ? null : capacity,
    held,
    holds,
    available: Math.max(0, capacity - held),
    waiters,
  };
}

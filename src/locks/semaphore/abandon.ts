/**
 * An acquisition that gives up leaves the queue and closes its operation: a copy of one of its
 * attempts that reaches Redis later (re-sent by the Redis client after edgelock gave up on it)
 * finds the record `left` and takes nothing. If such a copy ran first and took permits, they
 * are returned here, in the same script, as are those of a hand-off announced to it that it never
 * heard of.
 */
import type { OperationContext } from "../../hold/context.js";
import { SERVER_NOW_MS } from "../../hold/lua.js";
import { defineScript, runScript } from "../../hold/script.js";
import { waiterMember } from "./acquire.js";
import { grantToParkedWaiters, PERMIT_HAND_OFF_KEYS, permitHandOffKeys } from "./hand-off.js";
import type { SemaphoreKeys } from "./keys.js";
import { loadHolds } from "./lua.js";

// KEYS: 1 operation record, 2 holds (SemaphoreKeys.leases), 3 capacity, then PERMIT_HAND_OFF_KEYS (fence,
//       queue, timeouts, parked waiters, the hand-off channels)
// ARGV: 1 owner, 2 the waiter's queue member, 3 operation record ttl ms
// Reply: {1} closed, nothing was held; {0} closed, and the permits a copy took (or a hand-off
// announced to it) were returned. Either way what it reserved or returned goes to the parked
// waiters behind it (grantToParkedWaiters).
export const SEMAPHORE_ABANDON = defineScript({
  name: "semaphore.abandon",
  keys: ["operationKey", "leasesKey", "capacityKey", ...PERMIT_HAND_OFF_KEYS],
  args: ["owner", "waiter", "operationTtlMs"],
  replies: { 1: [1], 0: [1] },
  lua: `${SERVER_NOW_MS}
${loadHolds("leasesKey", true)}
redis.call('ZREM', queueKey, waiter)
redis.call('ZREM', timeoutsKey, waiter)
local announced = string.match(redis.call('HGET', parkedKey, waiter) or '', '^granted (%d+) ')
redis.call('HDEL', parkedKey, waiter)
local taken = redis.call('GET', operationKey)
redis.call('SET', operationKey, 'left', 'PX', operationTtlMs)
if taken == 'left' then taken = nil end
taken = taken or announced
if taken then
  dropHold(owner .. ' ' .. taken)
end
${grantToParkedWaiters()}
if taken then return {0} end
return {1}`,
});

export async function abandonPermits(
  ctx: OperationContext,
  keys: SemaphoreKeys,
  owner: string,
  permits: number,
  operationId: string,
): Promise<void> {
  await runScript(
    ctx,
    SEMAPHORE_ABANDON,
    {
      operationKey: keys.operation(operationId),
      leasesKey: keys.leases,
      capacityKey: keys.capacity,
      ...permitHandOffKeys(keys),
    },
    {
      owner,
      waiter: waiterMember(owner, operationId, permits),
      operationTtlMs: ctx.operationTtlMs,
    },
  );
}

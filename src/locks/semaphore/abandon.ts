/**
 * An acquisition that gives up leaves the queue and closes its operation: a copy of one of its
 * attempts that reaches Redis later (re-sent by the Redis client after edgelock gave up on it)
 * finds the record `left` and takes nothing. If such a copy ran first and took permits, they
 * are returned here, in the same script.
 */
import type { OperationContext } from "../context.js";
import { defineScript, runScript } from "../script.js";
import { waiterMember } from "./acquire.js";
import type { SemaphoreKeys } from "./keys.js";

// KEYS: 1 operation record, 2 queue, 3 timeouts, 4 leases, 5 counts
// ARGV: 1 owner, 2 the waiter's queue member, 3 operation record ttl ms
// Reply: {1} closed, nothing was held; {0} closed, and the permits a copy took were returned.
export const SEMAPHORE_ABANDON = defineScript({
  name: "semaphore.abandon",
  keys: ["operationKey", "queueKey", "timeoutsKey", "leasesKey", "countsKey"],
  args: ["owner", "waiter", "operationTtlMs"],
  replies: { 1: [1], 0: [1] },
  lua: `redis.call('ZREM', queueKey, waiter)
redis.call('ZREM', timeoutsKey, waiter)
local taken = redis.call('GET', operationKey)
redis.call('SET', operationKey, 'left', 'PX', operationTtlMs)
if not taken or taken == 'left' then return {1} end
local hold = owner .. ' ' .. taken
redis.call('ZREM', leasesKey, hold)
redis.call('HDEL', countsKey, hold)
return {0}`,
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
      queueKey: keys.queue,
      timeoutsKey: keys.timeouts,
      leasesKey: keys.leases,
      countsKey: keys.counts,
    },
    {
      owner,
      waiter: waiterMember(owner, operationId, permits),
      operationTtlMs: ctx.operationTtlMs,
    },
  );
}

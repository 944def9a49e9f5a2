/**
 * One attempt at the fair lock: take it when it is free and this owner is at the head of the
 * queue (or the queue is empty), re-enter it, or join / keep a place in the queue and learn what
 * paces the next poll. Dead waiters (deadline passed) are pruned first, so the queue never stalls
 * behind them.
 */
import type { QueueView } from "../../wait/queue-pace.js";
import type { OperationContext } from "../context.js";
import type { FairLockKeys } from "../keys.js";
import { replayAcquisition, SERVER_NOW_MS } from "../lua.js";
import { learnAverage, PACE_TTL_MS } from "../pace.js";
import { pruneDeadWaiters, refreshWaiter } from "../queue/lua.js";
import { ttlOrNull } from "../reply.js";
import { defineScript, runScript } from "../script.js";

// KEYS: 1 lock hash (owner -> holds), 2 fence, 3 queue, 4 timeouts, 5 pace, 6 operation record
// ARGV: 1 owner, 2 lease ms, 3 operation record ttl ms, 4 waiter timeout ms (0: a single
//       attempt, never enqueue), 5 pace ttl ms
// Reply: {1, fence, holds, pttl} held; {-1} a re-sent attempt whose first run acquired, but the
//        hold is gone since; {0, holder pttl, position, average hold ms, average hand-off gap ms,
//        ms the holder has held} busy (-1: unknown).
export const FAIR_ACQUIRE = defineScript({
  name: "fairLock.acquire",
  keys: ["lockKey", "fenceKey", "queueKey", "timeoutsKey", "paceKey", "operationKey"],
  args: ["owner", "leaseMs", "operationTtlMs", "waiterTimeoutMs", "paceTtlMs"],
  replies: {
    1: [4],
    0: [6],
    [-1]: [1],
  },
  lua: `${replayAcquisition("operationKey")}
${SERVER_NOW_MS}
${pruneDeadWaiters("queueKey", "timeoutsKey")}
local count
if redis.call('HEXISTS', lockKey, owner) == 1 then
  count = redis.call('HINCRBY', lockKey, owner, 1)
elseif redis.call('EXISTS', lockKey) == 0 then
  local head = redis.call('ZRANGE', queueKey, 0, 0, 'WITHSCORES')
  if head[1] == owner then
    -- A hand-off from the queue: learn how long the head takes to notice a release.
    local freed = tonumber(redis.call('HGET', paceKey, 'freed') or '-1')
    local at = tonumber(redis.call('HGET', paceKey, 'at') or '-1')
    if freed >= 0 and freed >= at and freed >= tonumber(head[2]) then
      ${learnAverage("paceKey", "gap", "now - freed")}
    end
    count = 1
  elseif head[1] == nil then
    count = 1
  end
  if count then redis.call('HSET', lockKey, owner, 1) end
end
if count then
  redis.call('ZREM', queueKey, owner)
  redis.call('ZREM', timeoutsKey, owner)
  local fence
  if count == 1 then
    fence = redis.call('INCR', fenceKey)
    redis.call('HSET', paceKey, 'at', now)
    redis.call('PEXPIRE', paceKey, paceTtlMs)
  else
    fence = tonumber(redis.call('GET', fenceKey) or '0')
  end
  if redis.call('PTTL', lockKey) < tonumber(leaseMs) then
    redis.call('PEXPIRE', lockKey, leaseMs)
  end
  redis.call('SET', operationKey, fence, 'PX', operationTtlMs)
  return {1, fence, count, redis.call('PTTL', lockKey)}
end
local timeout = tonumber(waiterTimeoutMs)
local position = -1
if timeout > 0 then
  if not redis.call('ZSCORE', queueKey, owner) then
    local ticket = now
    local tail = redis.call('ZRANGE', queueKey, -1, -1, 'WITHSCORES')
    if tail[2] and tonumber(tail[2]) >= ticket then ticket = tonumber(tail[2]) + 1 end
    redis.call('ZADD', queueKey, ticket, owner)
  end
  if redis.call('PTTL', queueKey) < timeout then redis.call('PEXPIRE', queueKey, timeout) end
  ${refreshWaiter("timeoutsKey")}
  position = redis.call('ZRANK', queueKey, owner)
end
local pttl = redis.call('PTTL', lockKey)
local pace = redis.call('HMGET', paceKey, 'at', 'hold', 'gap')
local heldFor = -1
if pttl ~= -2 and pace[1] then heldFor = math.max(0, now - tonumber(pace[1])) end
return {0, pttl, position, tonumber(pace[2] or '-1'), tonumber(pace[3] or '-1'), heldFor}`,
});

export type FairAttemptOutcome =
  | { readonly kind: "acquired"; readonly fencingToken: number }
  | { readonly kind: "busy"; readonly holderTtlMs: number | null; readonly queue: QueueView };

/**
 * @param waiterTimeoutMs the waiter's place lasts this long without a poll; 0 for a single
 *   attempt, which never enqueues
 * @param operationId names this attempt (see AcquisitionSpec.attempt)
 */
export async function attemptFairAcquire(
  ctx: OperationContext,
  keys: FairLockKeys,
  owner: string,
  leaseMs: number,
  waiterTimeoutMs: number,
  operationId: string,
): Promise<FairAttemptOutcome> {
  const operation = keys.operation(operationId);
  const reply = await runScript(
    ctx,
    FAIR_ACQUIRE,
    {
      lockKey: keys.lock,
      fenceKey: keys.fence,
      queueKey: keys.queue,
      timeoutsKey: keys.timeouts,
      paceKey: keys.pace,
      operationKey: operation,
    },
    { owner, leaseMs, operationTtlMs: ctx.operationTtlMs, waiterTimeoutMs, paceTtlMs: PACE_TTL_MS },
  );
  const [status, value, position, hold, gap, heldFor] = reply;
  if (status === 1) return { kind: "acquired", fencingToken: value ?? 0 };
  // -1: we held it for a moment and lost it again; to the caller that is the same as busy.
  const pttl = status === 0 ? value : undefined;
  const holderTtlMs = ttlOrNull(pttl);
  return {
    kind: "busy",
    holderTtlMs,
    queue: {
      position: position ?? -1,
      locked: pttl !== undefined && pttl !== -2,
      holderTtlMs,
      holdMs: knownOrNull(hold),
      gapMs: knownOrNull(gap),
      heldForMs: knownOrNull(heldFor),
    },
  };
}

/** A duration the script reports as -1 when unknown. */
function knownOrNull(ms: number | undefined): number | null {
  return ms === undefined || ms < 0 ? null : ms;
}

/**
 * One attempt at the fair lock: take it when it is free and this owner is at the head of the
 * queue (or the queue is empty), re-enter it, or join / keep a place in the queue and learn what
 * paces the next poll. Dead waiters (deadline passed) are pruned first, so the queue never stalls
 * behind them.
 */
import { newOperationId } from "../../ids.js";
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { QueueView } from "../../wait/queue-pace.js";
import type { OperationContext } from "../context.js";
import type { FairLockKeys } from "../keys.js";
import { replayAcquisition, SERVER_NOW_MS } from "../lua.js";
import { learnAverage, PACE_TTL_MS } from "../pace.js";
import { pruneDeadWaiters, refreshWaiter } from "../queue/lua.js";
import { checkedReply, ttlOrNull } from "../reply.js";

// KEYS: 1 lock hash (owner -> holds), 2 fence, 3 queue, 4 timeouts, 5 pace, 6 operation record
// ARGV: 1 owner, 2 lease ms, 3 operation record ttl ms, 4 waiter timeout ms (0: a single
//       attempt, never enqueue), 5 pace ttl ms
// Reply: {1, fence, holds, pttl} held; {-1} a re-sent attempt whose first run acquired, but the
//        hold is gone since; {0, holder pttl, position, average hold ms, average hand-off gap ms,
//        ms the holder has held} busy (-1: unknown).
export const FAIR_ACQUIRE = new Script(
  "fairLock.acquire",
  `${replayAcquisition("KEYS[6]")}
${SERVER_NOW_MS}
${pruneDeadWaiters("KEYS[3]", "KEYS[4]")}
local owner = ARGV[1]
local count
if redis.call('HEXISTS', KEYS[1], owner) == 1 then
  count = redis.call('HINCRBY', KEYS[1], owner, 1)
elseif redis.call('EXISTS', KEYS[1]) == 0 then
  local head = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if head[1] == owner then
    -- A hand-off from the queue: learn how long the head takes to notice a release.
    local freed = tonumber(redis.call('HGET', KEYS[5], 'freed') or '-1')
    local at = tonumber(redis.call('HGET', KEYS[5], 'at') or '-1')
    if freed >= 0 and freed >= at and freed >= tonumber(head[2]) then
      ${learnAverage("KEYS[5]", "gap", "now - freed")}
    end
    count = 1
  elseif head[1] == nil then
    count = 1
  end
  if count then redis.call('HSET', KEYS[1], owner, 1) end
end
if count then
  redis.call('ZREM', KEYS[3], owner)
  redis.call('ZREM', KEYS[4], owner)
  local fence
  if count == 1 then
    fence = redis.call('INCR', KEYS[2])
    redis.call('HSET', KEYS[5], 'at', now)
    redis.call('PEXPIRE', KEYS[5], ARGV[5])
  else
    fence = tonumber(redis.call('GET', KEYS[2]) or '0')
  end
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  redis.call('SET', KEYS[6], fence, 'PX', ARGV[3])
  return {1, fence, count, redis.call('PTTL', KEYS[1])}
end
local timeout = tonumber(ARGV[4])
local position = -1
if timeout > 0 then
  if not redis.call('ZSCORE', KEYS[3], owner) then
    local ticket = now
    local tail = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
    if tail[2] and tonumber(tail[2]) >= ticket then ticket = tonumber(tail[2]) + 1 end
    redis.call('ZADD', KEYS[3], ticket, owner)
  end
  if redis.call('PTTL', KEYS[3]) < timeout then redis.call('PEXPIRE', KEYS[3], timeout) end
  ${refreshWaiter("KEYS[4]")}
  position = redis.call('ZRANK', KEYS[3], owner)
end
local pttl = redis.call('PTTL', KEYS[1])
local pace = redis.call('HMGET', KEYS[5], 'at', 'hold', 'gap')
local heldFor = -1
if pttl ~= -2 and pace[1] then heldFor = math.max(0, now - tonumber(pace[1])) end
return {0, pttl, position, tonumber(pace[2] or '-1'), tonumber(pace[3] or '-1'), heldFor}`,
);

export type FairAttemptOutcome =
  | { readonly kind: "acquired"; readonly fencingToken: number }
  | { readonly kind: "busy"; readonly holderTtlMs: number | null; readonly queue: QueueView };

/**
 * @param waiterTimeoutMs the waiter's place lasts this long without a poll; 0 for a single
 *   attempt, which never enqueues
 */
export async function attemptFairAcquire(
  ctx: OperationContext,
  keys: FairLockKeys,
  owner: string,
  leaseMs: number,
  waiterTimeoutMs: number,
): Promise<FairAttemptOutcome> {
  // A fresh id per attempt: a replay of *this* attempt must not be confused with a later one.
  const operation = keys.operation(newOperationId());
  const raw = await callScript(
    ctx.redis,
    FAIR_ACQUIRE,
    [keys.lock, keys.fence, keys.queue, keys.timeouts, keys.pace, operation],
    [
      owner,
      String(leaseMs),
      String(ctx.operationTtlMs),
      String(waiterTimeoutMs),
      String(PACE_TTL_MS),
    ],
    ctx.retry,
    ctx.observer,
  );
  const [status, value, position, hold, gap, heldFor] = checkedReply(raw, FAIR_ACQUIRE.name, {
    1: [4],
    0: [6],
    [-1]: [1],
  });
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

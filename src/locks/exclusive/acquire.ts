/** One acquisition attempt of the reentrant lock: take it, re-enter it, or learn the holder's pttl. */
import { PACE_WINDOW_MS, pacedPollDelay } from "../../wait/pace.js";
import type { AttemptOutcome } from "../acquisition.js";
import type { OperationContext } from "../context.js";
import type { LockKeys } from "../keys.js";
import { replayAcquisition, SERVER_NOW_MS } from "../lua.js";
import { learnAverage, PACE_TTL_MS } from "../pace.js";
import { ttlOrNull } from "../reply.js";
import { defineScript, runScript } from "../script.js";

// KEYS: 1 lock hash (owner -> hold count), 2 fence counter, 3 operation record,
//       4 pace hash (at: server ms of the current first acquisition, hold: average ms from
//         taking the lock to freeing it, cycle: average ms from one holder taking it to the next
//         when the next one had been waiting, dev: mean deviation of the hold),
//       5 waiters (sorted set: owner -> server ms of its last busy poll)
// ARGV: 1 owner, 2 lease ms, 3 operation record ttl ms, 4 pace ttl ms, 5 waiter window ms
// Reply: {1, fence, hold count, pttl} held; {0, holder pttl, waiters, average hold ms, ms the
//        holder has held, average cycle ms, hold deviation ms} busy (-1: unknown); {-1} a
//        re-sent attempt whose first run acquired, but the hold is gone since.
// KEYS 4 and 5 are optional (RedLock runs this script on three keys): without them nothing is
// learnt and the busy reply is {0, holder pttl}.
export const ACQUIRE = defineScript({
  name: "lock.acquire",
  keys: ["lockKey", "fenceKey", "operationKey", "holdStatsKey", "pollersKey"],
  optionalKeys: ["holdStatsKey", "pollersKey"],
  args: ["owner", "leaseMs", "operationTtlMs", "paceTtlMs", "pollWindowMs"],
  replies: { 1: [4], 0: [7], [-1]: [1] },
  lua: `${replayAcquisition("operationKey")}
${SERVER_NOW_MS}
local count
if redis.call('EXISTS', lockKey) == 0 then
  redis.call('HSET', lockKey, owner, 1)
  count = 1
elseif redis.call('HEXISTS', lockKey, owner) == 1 then
  count = redis.call('HINCRBY', lockKey, owner, 1)
else
  local pttl = redis.call('PTTL', lockKey)
  if not pollersKey then return {0, pttl} end
  local window = tonumber(pollWindowMs)
  redis.call('ZADD', pollersKey, now, owner)
  redis.call('ZREMRANGEBYSCORE', pollersKey, '-inf', now - window)
  redis.call('PEXPIRE', pollersKey, window)
  local pace = redis.call('HMGET', holdStatsKey, 'at', 'hold', 'cycle', 'dev')
  local heldFor = -1
  if pace[1] then heldFor = math.max(0, now - tonumber(pace[1])) end
  return {0, pttl, redis.call('ZCARD', pollersKey), tonumber(pace[2] or '-1'), heldFor,
    tonumber(pace[3] or '-1'), tonumber(pace[4] or '-1')}
end
local waited = pollersKey and redis.call('ZREM', pollersKey, owner) == 1
local fence
if count == 1 then
  fence = redis.call('INCR', fenceKey)
  if holdStatsKey then
    local previous = redis.call('HGET', holdStatsKey, 'at')
    if waited and previous then
      -- This owner waited through the previous hold: now - previous is one hand-off cycle.
      ${learnAverage("holdStatsKey", "cycle", "now - tonumber(previous)")}
    end
    redis.call('HSET', holdStatsKey, 'at', now)
    redis.call('PEXPIRE', holdStatsKey, paceTtlMs)
  end
else
  fence = tonumber(redis.call('GET', fenceKey) or '0')
end
if redis.call('PTTL', lockKey) < tonumber(leaseMs) then
  redis.call('PEXPIRE', lockKey, leaseMs)
end
redis.call('SET', operationKey, fence, 'PX', operationTtlMs)
return {1, fence, count, redis.call('PTTL', lockKey)}`,
});

export async function attemptAcquire(
  ctx: OperationContext,
  keys: LockKeys,
  owner: string,
  leaseMs: number,
  operationId: string,
): Promise<AttemptOutcome> {
  const operation = keys.operation(operationId);
  const sentAt = Date.now();
  const reply = await runScript(
    ctx,
    ACQUIRE,
    {
      lockKey: keys.lock,
      fenceKey: keys.fence,
      operationKey: operation,
      holdStatsKey: keys.holdStats,
      pollersKey: keys.pollers,
    },
    {
      owner,
      leaseMs,
      operationTtlMs: ctx.operationTtlMs,
      paceTtlMs: PACE_TTL_MS,
      pollWindowMs: PACE_WINDOW_MS,
    },
  );
  // The second element is the fencing token when held, the holder's pttl when busy.
  const [status, value, waiters, holdMs, heldForMs, cycleMs, holdDeviationMs] = reply;
  if (status === 1) return { kind: "acquired", fencingToken: value ?? 0 };
  // -1: we held it for a moment and lost it again; to the caller that is the same as busy.
  const holderTtlMs = status === 0 ? ttlOrNull(value) : null;
  const nextPollMs =
    waiters === undefined || holdMs === undefined || heldForMs === undefined
      ? undefined
      : pacedPollDelay({
          waiters,
          holdMs,
          heldForMs,
          cycleMs: cycleMs ?? -1,
          holdDeviationMs: holdDeviationMs ?? -1,
          holderTtlMs,
          roundTripMs: Date.now() - sentAt,
        });
  return { kind: "busy", holderTtlMs, ...(nextPollMs === undefined ? {} : { nextPollMs }) };
}

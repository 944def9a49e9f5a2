/** One acquisition attempt of the reentrant lock: take it, re-enter it, or learn the holder's pttl. */
import { newOperationId } from "../../ids.js";
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { AttemptOutcome } from "../acquisition.js";
import type { OperationContext } from "../context.js";
import type { LockKeys } from "../keys.js";
import { integerReply, ttlOrNull } from "../reply.js";

// KEYS: 1 lock hash (owner -> hold count), 2 fence counter, 3 operation record
// ARGV: 1 owner, 2 lease ms, 3 operation record ttl ms
// Reply: {1, fence, hold count, pttl} held; {0, holder pttl} busy;
//        {-1} a re-sent attempt whose first run acquired, but the hold is gone since.
export const ACQUIRE = new Script(
  "lock.acquire",
  `local replay = redis.call('GET', KEYS[3])
if replay then
  local held = redis.call('HGET', KEYS[1], ARGV[1])
  if held then return {1, tonumber(replay), tonumber(held), redis.call('PTTL', KEYS[1])} end
  return {-1}
end
local count
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], ARGV[1], 1)
  count = 1
elseif redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  count = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
else
  return {0, redis.call('PTTL', KEYS[1])}
end
local fence
if count == 1 then
  fence = redis.call('INCR', KEYS[2])
else
  fence = tonumber(redis.call('GET', KEYS[2]) or '0')
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
redis.call('SET', KEYS[3], fence, 'PX', ARGV[3])
return {1, fence, count, redis.call('PTTL', KEYS[1])}`,
);

export async function attemptAcquire(
  ctx: OperationContext,
  keys: LockKeys,
  owner: string,
  leaseMs: number,
): Promise<AttemptOutcome> {
  // A fresh id per attempt: a replay of *this* attempt must not be confused with a later one.
  const operation = keys.operation(newOperationId());
  const raw = await callScript(
    ctx.redis,
    ACQUIRE,
    [keys.lock, keys.fence, operation],
    [owner, String(leaseMs), String(ctx.operationTtlMs)],
    ctx.retry,
    ctx.observer,
  );
  // The second element is the fencing token when held, the holder's pttl when busy.
  const [status, value] = integerReply(raw, ACQUIRE.name);
  if (status === 1) return { kind: "acquired", fencingToken: value ?? 0 };
  // -1: we held it for a moment and lost it again; to the caller that is the same as busy.
  return { kind: "busy", holderTtlMs: status === 0 ? ttlOrNull(value) : null };
}

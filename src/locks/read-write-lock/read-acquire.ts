/**
 * One attempt at the read lock: add a read hold with its own expiry unless another owner holds
 * the write lock, or (writer preference) a writer is waiting and this owner holds nothing yet.
 * Owners that already hold (a read hold, or the write lock: downgrade) always get one more, so
 * a waiting writer never deadlocks a reader that re-enters.
 */
import { newOperationId } from "../../ids.js";
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { AttemptOutcome } from "../acquisition.js";
import type { OperationContext } from "../context.js";
import type { ReadWriteLockKeys } from "../keys.js";
import { SERVER_NOW_MS } from "../lua.js";
import { checkedReply, ttlOrNull } from "../reply.js";
import { expireReadsWithLastHold, pruneExpiredReads } from "./lua.js";

// KEYS: 1 write hash, 2 fence, 3 reads, 4 readers, 5 waiting writers, 6 operation record
// ARGV: 1 owner, 2 lease ms, 3 operation record ttl ms, 4 hold id, 5 writer preference (1/0)
// Reply: {1, fence, read holds of the owner} held; {0, writer's pttl, 1} busy: written;
//        {0, -1, 2} busy: a writer waits; {-1} a re-sent attempt whose first run acquired, but
//        the hold is gone since.
export const READ_ACQUIRE = new Script(
  "readWriteLock.acquireRead",
  `local hold = ARGV[1] .. ' ' .. ARGV[4]
local replay = redis.call('GET', KEYS[6])
if replay then
  if redis.call('ZSCORE', KEYS[3], hold) then
    return {1, tonumber(replay), tonumber(redis.call('HGET', KEYS[4], ARGV[1]) or '0')}
  end
  return {-1}
end
${SERVER_NOW_MS}
${pruneExpiredReads("KEYS[3]", "KEYS[4]")}
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
local owner = ARGV[1]
if redis.call('HEXISTS', KEYS[1], owner) == 0 then
  if redis.call('EXISTS', KEYS[1]) == 1 then return {0, redis.call('PTTL', KEYS[1]), 1} end
  if ARGV[5] == '1' and redis.call('HEXISTS', KEYS[4], owner) == 0
      and redis.call('ZCARD', KEYS[5]) > 0 then
    return {0, -1, 2}
  end
end
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), hold)
local count = redis.call('HINCRBY', KEYS[4], owner, 1)
${expireReadsWithLastHold("KEYS[3]", "KEYS[4]")}
local fence = tonumber(redis.call('GET', KEYS[2]) or '0')
redis.call('SET', KEYS[6], fence, 'PX', ARGV[3])
return {1, fence, count}`,
);

/**
 * @param holdId names this read hold (its own expiry, extend and release)
 * @param writerPreference when true, owners without holds wait while a writer waits
 */
export async function attemptReadAcquire(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
  owner: string,
  leaseMs: number,
  holdId: string,
  writerPreference: boolean,
): Promise<AttemptOutcome> {
  const operation = keys.operation(newOperationId());
  const raw = await callScript(
    ctx.redis,
    READ_ACQUIRE,
    [keys.lock, keys.fence, keys.reads, keys.readers, keys.writers, operation],
    [owner, String(leaseMs), String(ctx.operationTtlMs), holdId, writerPreference ? "1" : "0"],
    ctx.retry,
    ctx.observer,
  );
  const [status, value] = checkedReply(raw, READ_ACQUIRE.name, { 1: [3], 0: [3], [-1]: [1] });
  // Read holds share the current fencing token: the last writer's.
  if (status === 1) return { kind: "acquired", fencingToken: value ?? 0 };
  return { kind: "busy", holderTtlMs: status === 0 ? ttlOrNull(value) : null };
}

/**
 * One attempt at the read lock: add a read hold with its own expiry unless another owner holds
 * the write lock, or (writer preference) a writer is waiting and this owner holds nothing yet.
 * Owners that already hold (a read hold, or the write lock: downgrade) always get one more, so
 * a waiting writer never deadlocks a reader that re-enters.
 */

import type { OperationContext } from "../../hold/context.js";
import { LUA_FRAGMENTS } from "../../hold/fragment.js";
import { SERVER_NOW_MS } from "../../hold/lua.js";
import type { ReadWriteLockKeys } from "../../hold/script.js";
import { defineScript, runScript, ttlOrNull } from "../../hold/script.js";
import type { AttemptOutcome } from "../../wait/attempt.js";
import { expireReadsWithLastHold, ownerReadHolds, pruneExpiredReads } from "./lua.js";
import { acquireKeys } from "./script-keys.js";

/**
 * The fast path of a read acquisition (issue 42): when nobody writes, holds a read hold or waits
 * to write, and this request is no re-send (no operation record), the first read hold is taken
 * with only what its guarantees need: the hold with its expiry, the set's lease (the last read
 * hold's end), the operation record with the current fencing token. No
 * pruning (nothing to prune), no writer-preference checks (no writer registered).
 */
const FIRST_READ_HOLD_FAST_PATH = `if redis.call('EXISTS', lockKey, readsKey, writersKey, operationKey) == 0 then
  local fence = tonumber(redis.call('GET', fenceKey) or '0')
  redis.call('ZADD', readsKey, now + tonumber(leaseMs), hold)
  redis.call('PEXPIRE', readsKey, leaseMs)
  redis.call('SET', operationKey, fence, 'PX', operationTtlMs)
  return {1, fence}
end`;
/* @__PURE__ */ LUA_FRAGMENTS.push({
  name: "FIRST_READ_HOLD_FAST_PATH",
  lua: FIRST_READ_HOLD_FAST_PATH,
  needs: [
    "lockKey",
    "readsKey",
    "writersKey",
    "operationKey",
    "fenceKey",
    "now",
    "leaseMs",
    "hold",
    "operationTtlMs",
  ],
});

// KEYS: 1 write hash, 2 fence, 3 reads, 4 waiting writers, 5 operation record
// ARGV: 1 owner, 2 lease ms, 3 operation record ttl ms, 4 hold id, 5 writer preference (1/0)
// Reply: {1, fence} held; {0, writer's pttl, 1} busy: written;
//        {0, -1, 2} busy: a writer waits; {-1} a re-sent attempt whose first run acquired, but
//        the hold is gone since.
export const READ_ACQUIRE = defineScript({
  name: "readWriteLock.acquireRead",
  keys: ["lockKey", "fenceKey", "readsKey", "writersKey", "operationKey"],
  args: ["owner", "leaseMs", "operationTtlMs", "holdId", "writerPreference"],
  replies: { 1: [2], 0: [3], [-1]: [1] },
  lua: `local hold = owner .. ' ' .. holdId
${SERVER_NOW_MS}
${FIRST_READ_HOLD_FAST_PATH}
${pruneExpiredReads("readsKey")}
local replay = redis.call('GET', operationKey)
if replay then
  local expiry = redis.call('ZSCORE', readsKey, hold)
  if not expiry then return {-1} end
  -- A later attempt sharing the id: its lease counts from its own send (only ever lengthened).
  if tonumber(expiry) < now + tonumber(leaseMs) then
    redis.call('ZADD', readsKey, now + tonumber(leaseMs), hold)
    ${expireReadsWithLastHold("readsKey")}
  end
  return {1, tonumber(replay)}
end
if redis.call('HEXISTS', lockKey, owner) == 0 then
  local pttl = redis.call('PTTL', lockKey)
  if pttl ~= -2 then return {0, pttl, 1} end
  redis.call('ZREMRANGEBYSCORE', writersKey, '-inf', now)
  if writerPreference == '1' and redis.call('ZCARD', writersKey) > 0 then
    ${ownerReadHolds("readsKey", "owner")}
    if ownerReads == 0 then return {0, -1, 2} end
  end
end
redis.call('ZADD', readsKey, now + tonumber(leaseMs), hold)
${expireReadsWithLastHold("readsKey")}
local fence = tonumber(redis.call('GET', fenceKey) or '0')
redis.call('SET', operationKey, fence, 'PX', operationTtlMs)
return {1, fence}`,
});

/**
 * @param holdId names this read hold (its own expiry, extend and release)
 * @param writerPreference when true, owners without holds wait while a writer waits
 * @param operationId names this attempt (see AcquisitionSpec.attempt)
 */
export async function attemptReadAcquire(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
  owner: string,
  leaseMs: number,
  holdId: string,
  writerPreference: boolean,
  operationId: string,
): Promise<AttemptOutcome> {
  const reply = await runScript(ctx, READ_ACQUIRE, acquireKeys(keys, operationId), {
    owner,
    leaseMs,
    operationTtlMs: ctx.operationTtlMs,
    holdId,
    writerPreference: writerPreference ? "1" : "0",
  });
  const [status, value] = reply;
  // Read holds share the current fencing token: the last writer's.
  if (status === 1) return { kind: "acquired", fencingToken: value ?? 0 };
  // -1: an earlier attempt of this operation acquired, and that hold is gone since.
  if (status === -1) return { kind: "busy", holderTtlMs: null, operationSpent: true };
  return { kind: "busy", holderTtlMs: ttlOrNull(value) };
}

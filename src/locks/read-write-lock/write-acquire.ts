/**
 * One attempt at the write lock: take it when nobody holds it (no writer, no live read hold),
 * re-enter it, or register as a waiting writer (writer preference: new readers then wait behind
 * it). A reader asking for the write lock without holding it is refused at once: upgrading
 * would deadlock against any other reader doing the same.
 */
import { LockUpgradeError } from "../../errors.js";
import { newOperationId } from "../../ids.js";
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { AttemptOutcome } from "../acquisition.js";
import type { OperationContext } from "../context.js";
import type { ReadWriteLockKeys } from "../keys.js";
import { replayAcquisition, SERVER_NOW_MS } from "../lua.js";
import { refreshWaiter } from "../queue/lua.js";
import { checkedReply, ttlOrNull } from "../reply.js";
import { pruneExpiredReads } from "./lua.js";

// KEYS: 1 write hash (owner -> write holds), 2 fence, 3 reads, 4 readers, 5 waiting writers,
//       6 operation record
// ARGV: 1 owner, 2 lease ms, 3 operation record ttl ms, 4 waiter timeout ms (0: do not register
//       as a waiting writer)
// Reply: {1, fence, write holds, pttl} held; {0, ms until the holders' leases end (-1 unknown)}
//        busy; {-1} a re-sent attempt whose first run acquired, but the hold is gone since;
//        {-2} refused: the owner holds read holds only (an upgrade).
export const WRITE_ACQUIRE = new Script(
  "readWriteLock.acquireWrite",
  `${replayAcquisition("KEYS[6]")}
${SERVER_NOW_MS}
${pruneExpiredReads("KEYS[3]", "KEYS[4]")}
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
local owner = ARGV[1]
local writing = redis.call('HEXISTS', KEYS[1], owner) == 1
if not writing and redis.call('HEXISTS', KEYS[4], owner) == 1 then return {-2} end
if not writing then
  local busyFor
  if redis.call('EXISTS', KEYS[1]) == 1 then
    busyFor = redis.call('PTTL', KEYS[1])
  else
    local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
    if last[2] then busyFor = tonumber(last[2]) - now end
  end
  if busyFor then
    local timeout = tonumber(ARGV[4])
    if timeout > 0 then
      ${refreshWaiter("KEYS[5]")}
    end
    return {0, busyFor}
  end
end
local count = redis.call('HINCRBY', KEYS[1], owner, 1)
local fence
if count == 1 then
  fence = redis.call('INCR', KEYS[2])
else
  fence = tonumber(redis.call('GET', KEYS[2]) or '0')
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
redis.call('ZREM', KEYS[5], owner)
redis.call('SET', KEYS[6], fence, 'PX', ARGV[3])
return {1, fence, count, redis.call('PTTL', KEYS[1])}`,
);

/**
 * @param waiterTimeoutMs how long the registration as a waiting writer lasts without a poll; 0
 *   registers nothing (a single attempt, or writer preference off)
 * @throws LockUpgradeError when `owner` holds read holds but not the write lock
 */
export async function attemptWriteAcquire(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
  owner: string,
  leaseMs: number,
  waiterTimeoutMs: number,
  lockName: string,
): Promise<AttemptOutcome> {
  const operation = keys.operation(newOperationId());
  const raw = await callScript(
    ctx.redis,
    WRITE_ACQUIRE,
    [keys.lock, keys.fence, keys.reads, keys.readers, keys.writers, operation],
    [owner, String(leaseMs), String(ctx.operationTtlMs), String(waiterTimeoutMs)],
    ctx.retry,
    ctx.observer,
  );
  const [status, value] = checkedReply(raw, WRITE_ACQUIRE.name, {
    1: [4],
    0: [2],
    [-1]: [1],
    [-2]: [1],
  });
  if (status === 1) return { kind: "acquired", fencingToken: value ?? 0 };
  if (status === -2) {
    throw new LockUpgradeError(
      `Cannot take the write lock of "${lockName}" while holding only read holds: an upgrade ` +
        "would deadlock against another reader doing the same. Release the read holds first.",
    );
  }
  return { kind: "busy", holderTtlMs: status === 0 ? ttlOrNull(value) : null };
}

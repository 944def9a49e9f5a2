/**
 * One attempt at the write lock: take it when nobody holds it (no writer, no live read hold),
 * re-enter it, or register as a waiting writer (writer preference: new readers then wait behind
 * it). A reader asking for the write lock without holding it is refused at once: upgrading
 * would deadlock against any other reader doing the same.
 */
import { LockUpgradeError } from "../../errors.js";
import type { AttemptOutcome } from "../acquisition.js";
import type { OperationContext } from "../context.js";
import type { ReadWriteLockKeys } from "../keys.js";
import { grantExclusiveHold, replayAcquisition, SERVER_NOW_MS } from "../lua.js";
import { refreshWaiter } from "../queue/lua.js";
import { ttlOrNull } from "../reply.js";
import { defineScript, runScript } from "../script.js";
import { acquireKeys } from "./acquire-keys.js";
import { pruneExpiredReads } from "./lua.js";

// KEYS: 1 write hash (owner -> write holds), 2 fence, 3 reads, 4 readers, 5 waiting writers,
//       6 operation record
// ARGV: 1 owner, 2 lease ms, 3 operation record ttl ms, 4 waiter timeout ms (0: do not register
//       as a waiting writer)
// Reply: {1, fence, write holds, pttl} held; {0, ms until the holders' leases end (-1 unknown)}
//        busy; {-1} a re-sent attempt whose first run acquired, but the hold is gone since;
//        {-2} refused: the owner holds read holds only (an upgrade).
export const WRITE_ACQUIRE = defineScript({
  name: "readWriteLock.acquireWrite",
  keys: ["lockKey", "fenceKey", "readsKey", "readersKey", "writersKey", "operationKey"],
  args: ["owner", "leaseMs", "operationTtlMs", "waiterTimeoutMs"],
  replies: {
    1: [4],
    0: [2],
    [-1]: [1],
    [-2]: [1],
  },
  lua: `${replayAcquisition("operationKey", "leaseMs")}
${SERVER_NOW_MS}
${pruneExpiredReads("readsKey", "readersKey")}
redis.call('ZREMRANGEBYSCORE', writersKey, '-inf', now)
local writing = redis.call('HEXISTS', lockKey, owner) == 1
if not writing and redis.call('HEXISTS', readersKey, owner) == 1 then return {-2} end
if not writing then
  local busyFor
  if redis.call('EXISTS', lockKey) == 1 then
    busyFor = redis.call('PTTL', lockKey)
  else
    local last = redis.call('ZRANGE', readsKey, -1, -1, 'WITHSCORES')
    if last[2] then busyFor = tonumber(last[2]) - now end
  end
  if busyFor then
    local timeout = tonumber(waiterTimeoutMs)
    if timeout > 0 then
      ${refreshWaiter("writersKey")}
    end
    return {0, busyFor}
  end
end
local count = redis.call('HINCRBY', lockKey, owner, 1)
redis.call('ZREM', writersKey, owner)
${grantExclusiveHold()}`,
});

/**
 * @param waiterTimeoutMs how long the registration as a waiting writer lasts without a poll; 0
 *   registers nothing (a single attempt, or writer preference off)
 * @param operationId names this attempt (see AcquisitionSpec.attempt)
 * @throws LockUpgradeError when `owner` holds read holds but not the write lock
 */
export async function attemptWriteAcquire(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
  owner: string,
  leaseMs: number,
  waiterTimeoutMs: number,
  lockName: string,
  operationId: string,
): Promise<AttemptOutcome> {
  const reply = await runScript(ctx, WRITE_ACQUIRE, acquireKeys(keys, operationId), {
    owner,
    leaseMs,
    operationTtlMs: ctx.operationTtlMs,
    waiterTimeoutMs,
  });
  const [status, value] = reply;
  if (status === 1) return { kind: "acquired", fencingToken: value ?? 0 };
  if (status === -2) {
    throw new LockUpgradeError(
      `Cannot take the write lock of "${lockName}" while holding only read holds: an upgrade ` +
        "would deadlock against another reader doing the same. Release the read holds first.",
    );
  }
  // -1: an earlier attempt of this operation acquired, and that hold is gone since.
  if (status === -1) return { kind: "busy", holderTtlMs: null, operationSpent: true };
  return { kind: "busy", holderTtlMs: ttlOrNull(value) };
}

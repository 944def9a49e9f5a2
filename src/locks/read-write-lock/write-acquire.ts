/**
 * One attempt at the write lock: take it when nobody holds it (no writer, no live read hold) and
 * no release reserved it for other waiting writers, re-enter it, or wait: the writer takes a
 * ticket in the lock's queue (queue-directed polling, src/wait/poll.ts, as the plain lock's
 * waiters do; in push mode it parks there), and, with writer preference, registers as a waiting
 * writer, so that new readers wait behind it. A reader asking for the write lock without holding
 * it is refused at once: upgrading would deadlock against any other reader doing the same.
 * As with the plain lock, dead waiters of the queue are pruned by the release that hands the lock
 * on, not at every attempt (see acquireScriptLua in exclusive/lock.ts).
 */
import { LockUpgradeError } from "../../errors.js";
import type { OperationContext } from "../../hold/context.js";
import { grantExclusiveHold, replayAcquisition, SERVER_NOW_MS } from "../../hold/lua.js";
import {
  busyTurnReply,
  learnHandOff,
  learnRoundTrip,
  markContendedHold,
  readPace,
  writePace,
} from "../../hold/pace.js";
import {
  endingParkBeside,
  PARKING_FIRST_ATTEMPT,
  registerParked,
  takeAnnouncedGrant,
} from "../../hold/queue/hand-off.js";
import { joinQueue, refreshWaiter, reservedForAnother, WAITER_LUA } from "../../hold/queue/lua.js";
import type { ReadWriteLockKeys } from "../../hold/script.js";
import { defineScript, runScript } from "../../hold/script.js";
import type { QueuedAttemptOutcome, WaiterTerms } from "../../wait/attempt.js";
import {
  ACQUIRE_ARGS,
  freeAndUncontendedFastPath,
  queuedAttemptOutcome,
  waiterArgs,
} from "../exclusive/lock.js";
import { ownerReadHolds } from "./lua.js";
import { acquireKeys } from "./script-keys.js";

// KEYS: 1 write hash (owner -> write holds), 2 fence, 3 reads, 4 waiting writers, 5 operation
//       record, 6 pace hash (see LockKeys.holdStats), 7 queue (owner -> ticket), 8 timeouts
//       (owner -> deadline), 9 parked waiters (push mode, see queue/hand-off.ts)
// ARGV: 1 owner, 2 lease ms, 3 operation record ttl ms, 4 pace ttl ms, 5 waiter timeout ms (0: a
//       single attempt, never queue or register; -1: the last attempt of the poll budget, leave
//       the queue and the waiting writers when busy), 6 the waiter's last round trip ms (0:
//       unknown), 7 claim window ms of a writer that will park (0: it polls), 8 its operation id
//       (names its wake list), 9 "1" when its park is already in flight (see endingParkBeside),
//       10 writer preference ("1": a waiting writer registers in KEYS 4)
// Reply: {1, fence, write holds, pttl} held; busy: see busyTurnReply (pace.ts), with the
//        statistics unknown (-1) while only read holds keep the writer out (the statistics are
//        the writers'; pttl is then the time until the last read lease ends); {-1} a re-sent
//        attempt whose first run acquired, but the hold is gone since; {-2} refused: the owner
//        holds read holds only (an upgrade): the acquisition ends, out of the queue, and a
//        re-send of it is refused again.
/**
 * The operation record of a refused upgrade: a re-send (a lost answer) is refused again.
 * endAcquisition (the last attempt of a busy wait, or a refusal) leaves every place the
 * acquisition's earlier attempts took, else a release hands the lock to an owner that no longer
 * asks; its record ('left', or this) lets a late copy take nothing.
 */
const UPGRADE_REFUSED = "refused";

export const WRITE_ACQUIRE = defineScript({
  name: "readWriteLock.acquireWrite",
  keys: [
    "lockKey",
    "fenceKey",
    "readsKey",
    "writersKey",
    "operationKey",
    "holdStatsKey",
    "queueKey",
    "timeoutsKey",
    "parkedKey",
  ],
  args: [...ACQUIRE_ARGS, "writerPreference"],
  replies: { 1: [4], 0: [8], [-1]: [1], [-2]: [1] },
  lua: endingParkBeside(`${freeAndUncontendedFastPath("readsKey, writersKey")}
${takeAnnouncedGrant("parkedKey", "operationKey")}
${replayAcquisition("operationKey", "leaseMs", UPGRADE_REFUSED)}
${SERVER_NOW_MS}
${WAITER_LUA}
redis.call('ZREMRANGEBYSCORE', writersKey, '-inf', now)
local function endAcquisition(record)
  redis.call('ZREM', queueKey, waiter)
  redis.call('ZREM', timeoutsKey, waiter)
  redis.call('ZREM', writersKey, waiter)
  if registered then redis.call('HDEL', parkedKey, waiter) end
  redis.call('SET', operationKey, record, 'PX', operationTtlMs)
end
local count
local readsEnd
local pttl
if redis.call('HEXISTS', lockKey, owner) == 1 then
  count = redis.call('HINCRBY', lockKey, owner, 1)
else
  ${ownerReadHolds("readsKey", "owner", true)}
  if ownerReads > 0 then
    endAcquisition('${UPGRADE_REFUSED}')
    return {-2}
  end
  -- pttl -2: no writer; read once, as a busy reply answers it too. The read holds matter only
  -- then. Those whose lease has passed are not pruned here (readers prune them; the key expires
  -- with the last one): only live ones count.
  pttl = redis.call('PTTL', lockKey)
  if pttl == -2 then
    readsEnd = redis.call('ZRANGE', readsKey, -1, -1, 'WITHSCORES')[2]
    if readsEnd and tonumber(readsEnd) <= now then readsEnd = nil end
  end
  if pttl == -2 and not readsEnd
      and not ${reservedForAnother("holdStatsKey", "queueKey")} then
    count = 1
    redis.call('HSET', lockKey, owner, 1)
  end
end
if not count then
  local reading = pttl == -2 and readsEnd ~= nil
  if reading then pttl = tonumber(readsEnd) - now end
  local position, queueLength = -1, nil
  local timeout = tonumber(waiterTimeoutMs)
  if timeout > 0 then
    if writerPreference == '1' then
      ${refreshWaiter("writersKey")}
    end
    ${joinQueue("queueKey", "timeoutsKey", {
      whenFirst: `if not reading then
${markContendedHold("holdStatsKey", "fenceKey")}
end`,
      likelyNew: PARKING_FIRST_ATTEMPT,
    })}
  end
  ${readPace("holdStatsKey")}
  if timeout > 0 then
    ${learnRoundTrip()}
    ${registerParked("parkedKey")}
  elseif timeout < 0 then
    endAcquisition('left')
  end
  ${writePace("holdStatsKey")}
  if reading then return {0, pttl, position, -1, -1, -1, -1, queueLength or redis.call('ZCARD', queueKey)} end
  ${busyTurnReply("queueKey")}
end
local waited = redis.call('ZREM', queueKey, waiter) == 1
redis.call('ZREM', timeoutsKey, waiter)
redis.call('ZREM', writersKey, waiter)
if registered then redis.call('HDEL', parkedKey, waiter) end
${grantExclusiveHold(`${readPace("holdStatsKey")}
${learnHandOff("holdStatsKey", "waited", "fence")}
${writePace("holdStatsKey")}`)}`),
});

/**
 * One attempt at the write lock by `owner`, named `operationId` (see AcquisitionSpec.attempt):
 * the plain lock's attempt terms, and whether a waiting writer registers (writer preference).
 * An owner that holds read holds but not the write lock is `refused` with LockUpgradeError.
 */
export async function attemptWriteAcquire(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
  lockName: string,
  writerPreference: boolean,
  owner: string,
  leaseMs: number,
  operationId: string,
  waiter: WaiterTerms,
): Promise<QueuedAttemptOutcome> {
  const reply = await runScript(
    ctx,
    WRITE_ACQUIRE,
    {
      ...acquireKeys(keys, operationId),
      holdStatsKey: keys.holdStats,
      queueKey: keys.queue,
      timeoutsKey: keys.timeouts,
      parkedKey: keys.parked,
    },
    {
      owner,
      leaseMs,
      operationTtlMs: ctx.operationTtlMs,
      ...waiterArgs(waiter, operationId),
      writerPreference: writerPreference ? "1" : "0",
    },
  );
  if (reply[0] === -2) {
    return {
      kind: "refused",
      error: new LockUpgradeError(
        `Cannot take the write lock of "${lockName}" while holding only read holds: an upgrade ` +
          "would deadlock against another reader doing the same. Release the read holds first.",
      ),
    };
  }
  return queuedAttemptOutcome(reply);
}

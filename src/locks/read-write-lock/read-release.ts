/**
 * Release one read hold: the given hold, or (without a handle) the owner's hold that expires
 * first. The owner's other holds keep their own expiries.
 */

import type { OperationContext } from "../../hold/context.js";
import { LUA_FRAGMENTS } from "../../hold/fragment.js";
import { SERVER_NOW_MS } from "../../hold/lua.js";
import { PACE_TTL_MS, timeHandedOffHold } from "../../hold/pace.js";
import { handOffFreedLock, noticeBehind } from "../../hold/queue/hand-off.js";
import type { ReadWriteLockKeys } from "../../hold/script.js";
import { defineScript, runScript } from "../../hold/script.js";
import type { ReleaseResult } from "../../hold/state.js";
import { newOperationId } from "../../platform.js";
import { ownerReadHolds, pruneExpiredReads } from "./lua.js";
import { READ_ENDING_KEYS, readEndingKeys } from "./script-keys.js";

/**
 * The fast path of a read release (issue 42): when this hold is the only read hold, live, and no
 * writer queues (nobody to hand the freed lock to or re-time), the read holds' set goes at once
 * and the operation record is claimed (SET NX, also the replay check: a re-send finds it and
 * takes the slow path, which replays it). No clock: the set's TTL is its last hold's end, so a
 * set that still exists with one hold holds a live one (as Redis judges its keys' expiry).
 */
const LAST_READ_HOLD_FAST_PATH = `if redis.call('EXISTS', queueKey) == 0 then
  local only = redis.call('ZRANGE', readsKey, 0, 1)
  if only[1] and not only[2]
      and (only[1] == hold or holdId == '' and string.sub(only[1], 1, #owner + 1) == owner .. ' ')
      and redis.call('SET', operationKey, 0, 'NX', 'PX', operationTtlMs) then
    redis.call('DEL', readsKey)
    return {1, 0}
  end
end`;
/* @__PURE__ */ LUA_FRAGMENTS.push({
  name: "LAST_READ_HOLD_FAST_PATH",
  lua: LAST_READ_HOLD_FAST_PATH,
  needs: ["queueKey", "readsKey", "hold", "holdId", "owner", "operationKey", "operationTtlMs"],
});

// KEYS: 1 reads, 2 operation record, 3 write hash, 4 fence, 5 the queue of waiting writers,
//       6 their deadlines, 7 parked waiters, 8–15 the hand-off channels, 16 waiting writers
//       (writer preference), 17 the pace hash (a handed-off writer's hold is timed)
// ARGV: 1 owner, 2 hold id ('' for the owner's hold that expires first), 3 operation ttl ms,
//       4 pace ttl ms
// Reply: {1, read holds left to the owner} released; {0} no such live hold.
// The release of the last live read hold, while nobody writes, hands the lock to the head of the
// queue when that writer is parked (push mode, queue/hand-off.ts); a release that leaves read
// holds but ends the latest one tells that writer the new last end (`behind`), so that its park,
// bounded by the later end, ends just after the new one.
export const READ_RELEASE = defineScript({
  name: "readWriteLock.releaseRead",
  keys: READ_ENDING_KEYS,
  args: ["owner", "holdId", "operationTtlMs", "paceTtlMs"],
  replies: { 1: [2], 0: [1] },
  lua: `local hold = owner .. ' ' .. holdId
${LAST_READ_HOLD_FAST_PATH}
local replay = redis.call('GET', operationKey)
if replay then return {1, tonumber(replay)} end
${SERVER_NOW_MS}
${pruneExpiredReads("readsKey")}
if holdId == '' then
  hold = nil
  local live = redis.call('ZRANGE', readsKey, 0, -1)
  for i = 1, #live do
    if string.sub(live[i], 1, #owner + 1) == owner .. ' ' then
      hold = live[i]
      break
    end
  end
  if not hold then return {0} end
end
local releasedEnd = redis.call('ZSCORE', readsKey, hold)
if not releasedEnd then return {0} end
redis.call('ZREM', readsKey, hold)
${ownerReadHolds("readsKey", "owner")}
local left = ownerReads
local lastEnd = redis.call('ZRANGE', readsKey, -1, -1, 'WITHSCORES')[2]
local endedEarlier = lastEnd and tonumber(lastEnd) < tonumber(releasedEnd)
-- The set's TTL stays its last hold's end: the fast paths take a set that exists for a live one.
if endedEarlier then redis.call('PEXPIRE', readsKey, math.max(1, tonumber(lastEnd) - now)) end
if redis.call('EXISTS', lockKey) == 0 then
  if not lastEnd then
    ${handOffFreedLock("queueKey", "timeoutsKey", "parkedKey", { writersKey: "writersKey" })}
    ${timeHandedOffHold("holdStatsKey")}
  elseif endedEarlier then
    -- The last read end moved earlier: re-time the parked writer.
    local lease = tonumber(lastEnd) - now
    ${noticeBehind("queueKey", "parkedKey")}
  end
end
redis.call('SET', operationKey, left, 'PX', operationTtlMs)
return {1, left}`,
});

/** Releases read hold `holdId` of `owner`, or its earliest-expiring hold when holdId is null. */
export async function releaseReadHold(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
  owner: string,
  holdId: string | null,
  operationId: string = newOperationId(),
): Promise<ReleaseResult> {
  const reply = await runScript(ctx, READ_RELEASE, readEndingKeys(keys, operationId), {
    owner,
    holdId: holdId ?? "",
    operationTtlMs: ctx.operationTtlMs,
    paceTtlMs: PACE_TTL_MS,
  });
  const [status, left] = reply;
  return status === 1 ? { released: true, holdsLeft: left ?? 0 } : { released: false };
}

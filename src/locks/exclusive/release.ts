/**
 * Release one hold of an owner: the hold count drops by one; at zero the lock is deleted. The
 * same script serves the fair lock (same keys).
 */
import { newOperationId } from "../../ids.js";
import type { OperationContext } from "../context.js";
import type { LockKeys, ReadWriteLockKeys } from "../keys.js";
import { releaseOneHold, SERVER_NOW_MS } from "../lua.js";
import { learnHandOff, learnHold, PACE_TTL_MS } from "../pace.js";
import { handOffToParkedHead } from "../queue/hand-off.js";
import { pruneDeadWaiters, reserveForHead } from "../queue/lua.js";
import { defineScript, runScript } from "../script.js";
import type { ReleaseResult } from "../state.js";

// KEYS: 1 lock hash, 2 operation record, 3 pace hash, 4 queue, 5 timeouts, 6 fence counter,
//       7 parked waiters (3–7 optional: see acquire.ts), 8 a read-write lock's read holds (the
//       write lock: no hand-off while any is live), 9 its waiting writers (a writer handed the
//       lock stops waiting)
// ARGV: 1 owner, 2 operation record ttl ms, 3 pace ttl ms
// Reply: {1, holds left, 1 when the lock was handed over or others still wait, else 0} released
//        one hold ({1, holds left} replayed); {0} the owner holds nothing.
// The release that frees the lock folds this hold's length into the average hold and its mean
// deviation (weight 1/4, a sample counted as at most twice the average), then hands the lock to
// the head waiter if it is parked (push mode, queue/hand-off.ts), else reserves the lock for the
// head waiters for about a round trip (see reserveForHead).
const OPTIONAL_RELEASE_KEYS = [
  "holdStatsKey",
  "queueKey",
  "timeoutsKey",
  "fenceKey",
  "parkedKey",
  "readsKey",
  "writersKey",
] as const;

export const RELEASE = defineScript({
  name: "lock.release",
  keys: ["lockKey", "operationKey", ...OPTIONAL_RELEASE_KEYS],
  optionalKeys: OPTIONAL_RELEASE_KEYS,
  args: ["owner", "operationTtlMs", "paceTtlMs"],
  replies: { 1: [2, 3], 0: [1] },
  lua: releaseOneHold(
    "operationKey",
    `if holdStatsKey then
  ${SERVER_NOW_MS}
  ${learnHold("holdStatsKey")}
  if queueKey then
    ${pruneDeadWaiters("queueKey", "timeoutsKey")}
    local handedOff = false
    if parkedKey and not (readsKey and redis.call('ZCOUNT', readsKey, '(' .. now, '+inf') > 0) then
      ${handOffToParkedHead("queueKey", "timeoutsKey", "parkedKey", "writersKey")}
    end
    if handedOff then
      othersWaiting = 1
      ${learnHandOff("holdStatsKey", "true")}
    else
      if redis.call('EXISTS', queueKey) == 1 then othersWaiting = 1 end
      ${reserveForHead("holdStatsKey", "queueKey")}
    end
  end
end`,
  ),
});

/** Releases one hold; `othersWaiting`: the release handed the lock over or others still wait. */
export async function releaseHold(
  ctx: OperationContext,
  keys: LockKeys,
  owner: string,
  /** Reuse the id of a release whose outcome is unknown: if it ran, this one replays it. */
  operationId: string = newOperationId(),
  /**
   * The write lock's read holds (which must all have ended before a hand-off) and waiting
   * writers (a writer handed the lock leaves them).
   */
  readWrite?: Pick<ReadWriteLockKeys, "reads" | "writers">,
): Promise<ReleaseResult & { readonly othersWaiting?: boolean }> {
  const reply = await runScript(
    ctx,
    RELEASE,
    {
      lockKey: keys.lock,
      operationKey: keys.operation(operationId),
      holdStatsKey: keys.holdStats,
      queueKey: keys.queue,
      timeoutsKey: keys.timeouts,
      fenceKey: keys.fence,
      parkedKey: keys.parked,
      readsKey: readWrite?.reads,
      writersKey: readWrite?.writers,
    },
    { owner, operationTtlMs: ctx.operationTtlMs, paceTtlMs: PACE_TTL_MS },
  );
  const [status, left, othersWaiting] = reply;
  if (status !== 1) return { released: false };
  return { released: true, holdsLeft: left ?? 0, othersWaiting: othersWaiting === 1 };
}

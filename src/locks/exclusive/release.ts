/**
 * Release one hold of an owner: the hold count drops by one; at zero the lock is deleted. The
 * same script serves the fair lock (same keys).
 */

import type { OperationContext } from "../../hold/context.js";
import { releaseOneHold, SERVER_NOW_MS } from "../../hold/lua.js";
import { learnHandOff, learnHold, PACE_TTL_MS, readPace, writePace } from "../../hold/pace.js";
import {
  clearGrantRecord,
  HAND_OFF_CHANNEL_KEYS,
  handOffChannelKeys,
  handOffFreedLock,
} from "../../hold/queue/hand-off.js";
import { reserveForHead } from "../../hold/queue/lua.js";
import type { LockKeys, ReadWriteLockKeys } from "../../hold/script.js";
import { defineScript, runScript } from "../../hold/script.js";
import type { ReleaseResult } from "../../hold/state.js";
import { newOperationId } from "../../platform.js";

// KEYS: 1 lock hash, 2 operation record, 3 fence counter (for ARGV 4, and a hand-off's token),
//       4 pace hash, 5 queue, 6 timeouts, 7 parked waiters, 8–15 the hand-off channels, 16 the
//       operation record of the acquisition the hold was granted to by word (ARGV 5; else this
//       release's own record, unused), 17 a read-write lock's read holds (the write lock: no
//       hand-off while any is live), 18 its waiting writers (a writer handed the lock stops
//       waiting). 4–18 are optional, each only with the ones before it (see
//       keyList in script.ts): RedLock passes 1–3, and learns and queues nothing.
// ARGV: 1 owner, 2 operation record ttl ms, 3 pace ttl ms, 4 the fencing token of the hold to
//       release (0: whichever hold the owner has; else a later hold of the owner is left alone,
//       see refuseLaterHold), 5 the queue member of the waiter this hold was granted to by word
//       (`<owner> <operation id>`: its grant's record is cleared, see clearGrantRecord), else
//       empty
// Reply: {1, holds left, 1 when the lock was handed over or others still wait, else 0} released
//        one hold ({1, holds left} replayed); {0} the owner holds nothing.
// The release that frees a hold somebody queued behind (the others take the fast path, see
// releaseOneHold and TIMED_FIELD in pace.ts) folds its length into the average hold and its mean
// deviation (weight 1/4, a sample counted as at most twice the average), then hands the lock to
// the head waiter if it is parked (push mode, queue/hand-off.ts), else reserves the lock for the
// head waiters for about a round trip (see reserveForHead).
const OPTIONAL_RELEASE_KEYS = [
  "holdStatsKey",
  "queueKey",
  "timeoutsKey",
  "parkedKey",
  ...HAND_OFF_CHANNEL_KEYS,
  "grantOperationKey",
  "readsKey",
  "writersKey",
] as const;

export const RELEASE = defineScript({
  name: "lock.release",
  keys: ["lockKey", "operationKey", "fenceKey", ...OPTIONAL_RELEASE_KEYS],
  optionalKeys: OPTIONAL_RELEASE_KEYS,
  args: ["owner", "operationTtlMs", "paceTtlMs", "fencingToken", "grantedWaiter"],
  replies: { 1: [2, 3], 0: [1] },
  lua: releaseOneHold(
    "operationKey",
    `${SERVER_NOW_MS}
  ${learnHold()}
  if queueKey then
    ${handOffFreedLock("queueKey", "timeoutsKey", "parkedKey", { readsKey: "readsKey", writersKey: "writersKey" })}
    if handedOff then
      othersWaiting = 1
      ${learnHandOff("holdStatsKey", "true", "handedOff")}
    else
      if heads[1] then othersWaiting = 1 end
      ${reserveForHead()}
    end
  end
  ${writePace("holdStatsKey")}`,
    // A hold that nobody queued behind (the acquire scripts mark one that somebody did, see
    // markContendedHold) frees on the fast path: no waiter to hand it to or reserve it for,
    // nothing to learn. (The write lock's readers never queue: they poll.) One read of the pace
    // hash tells which, and serves the slow path too.
    `pace[7] == fence`,
    readPace("holdStatsKey", true),
    clearGrantRecord("parkedKey", "grantOperationKey", "fencingToken"),
  ),
});

/** Which hold a release means, and how it is sent. */
export interface ReleaseTarget {
  /** Reuse the id of a release whose outcome is unknown: if it ran, this one replays it. */
  readonly operationId?: string;
  /**
   * The write lock's read holds (which must all have ended before a hand-off) and waiting
   * writers (a writer handed the lock leaves them).
   */
  readonly readWrite?: Pick<ReadWriteLockKeys, "reads" | "writers">;
  /** The token of the hold meant (a handle's): a later hold of the same owner is left alone. */
  readonly fencingToken?: number;
  /**
   * The operation id of the acquisition this hold was granted to by word (with `fencingToken`):
   * the release clears the grant's record (clearGrantRecord in queue/hand-off.ts).
   */
  readonly grantOf?: string;
}

/** Releases one hold; `othersWaiting`: the release handed the lock over or others still wait. */
export async function releaseHold(
  ctx: OperationContext,
  keys: LockKeys,
  owner: string,
  { operationId = newOperationId(), readWrite, fencingToken = 0, grantOf }: ReleaseTarget = {},
): Promise<ReleaseResult & { readonly othersWaiting?: boolean }> {
  const operationKey = keys.operation(operationId);
  const reply = await runScript(
    ctx,
    RELEASE,
    {
      lockKey: keys.lock,
      operationKey,
      holdStatsKey: keys.holdStats,
      queueKey: keys.queue,
      timeoutsKey: keys.timeouts,
      fenceKey: keys.fence,
      parkedKey: keys.parked,
      ...handOffChannelKeys(keys),
      // Sent where the read-write keys follow, or where the hold's grant has a record to clear.
      grantOperationKey:
        grantOf !== undefined && fencingToken > 0
          ? keys.operation(grantOf)
          : readWrite === undefined
            ? undefined
            : operationKey,
      readsKey: readWrite?.reads,
      writersKey: readWrite?.writers,
    },
    {
      owner,
      operationTtlMs: ctx.operationTtlMs,
      paceTtlMs: PACE_TTL_MS,
      fencingToken,
      grantedWaiter: grantOf !== undefined && fencingToken > 0 ? `${owner} ${grantOf}` : "",
    },
  );
  const [status, left, othersWaiting] = reply;
  if (status !== 1) return { released: false };
  return { released: true, holdsLeft: left ?? 0, othersWaiting: othersWaiting === 1 };
}

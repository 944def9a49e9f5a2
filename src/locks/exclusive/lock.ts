/**
 * The reentrant lock (Redisson's RLock) and the exclusive hold under it, which the fair lock, the
 * write lock and RedLock share: the operations on a hold hash and the acquisition attempt.
 */

import type { OperationContext } from "../../hold/context.js";
import { LUA_FRAGMENTS } from "../../hold/fragment.js";
import { grantExclusiveHold, replayAcquisition, SERVER_NOW_MS } from "../../hold/lua.js";
import {
  busyTurnReply,
  learnHandOff,
  learnRoundTrip,
  markContendedHold,
  PACE_TTL_MS,
  readPace,
  writePace,
} from "../../hold/pace.js";
import {
  endingParkBeside,
  PARKING_FIRST_ATTEMPT,
  registerParked,
  takeAnnouncedGrant,
} from "../../hold/queue/hand-off.js";
import { leaveParkedQueue } from "../../hold/queue/leave.js";
import {
  joinQueue,
  pruneDeadWaiters,
  reservedForAnother,
  WAITER_LUA,
} from "../../hold/queue/lua.js";
import type { LockKeys, ReadWriteLockKeys } from "../../hold/script.js";
import { defineScript, lockKeys, runScript, ttlOrNull } from "../../hold/script.js";
import { checkLockName } from "../../validate.js";
import type { AcquireOptions, AcquisitionSpec } from "../../wait/acquire.js";
import { DEFAULT_WAITER_TIMEOUT_MS, type QueuedKind, queuedAttempts } from "../../wait/acquire.js";
import type { QueuedAttemptOutcome, WaiterTerms, WaitPlan } from "../../wait/attempt.js";
import { knownOrNull } from "../../wait/poll.js";
import type { LockRuntime } from "../../wait/runtime.js";
import type { LockOperations } from "../single-name-lock.js";
import { registerLockInternals, SingleNameLock } from "../single-name-lock.js";
import { extendLease } from "./extend.js";
import { forceRelease } from "./force-release.js";
import { inspectLock } from "./inspect.js";
import { releaseHold } from "./release.js";

export type { AcquireOptions };

/** The reentrant lock (Redisson's RLock). */
export class Lock extends SingleNameLock {
  /** @internal Use `client.lock(name)`. */
  constructor(runtime: LockRuntime, name: unknown) {
    const checked = checkLockName(name);
    const keys = lockKeys(runtime.prefix, checked);
    super(runtime, checked, exclusiveOperations(runtime, checked, keys));
    registerLockInternals(this, { runtime, keys, kind: "lock" });
  }
}

// The operations on an exclusive hold hash, shared by every exclusive kind: the fair and write
// locks replace only the acquisition.

/** A read-write lock's read holds and waiting writers, as its write lock's operations see them. */
type ReadWriteParts = Pick<ReadWriteLockKeys, "reads" | "writers">;

/**
 * Queued waiting by acquire rule `rule`. With `readWrite` (the write lock's) a writer that gives
 * up leaves the waiting writers too, and releases a hand-off it got meanwhile the write lock's way.
 */
export function exclusiveQueue(
  ctx: OperationContext,
  keys: LockKeys,
  rule: AcquireRule,
  readWrite?: ReadWriteParts,
): QueuedKind {
  return {
    attempt: (owner, leaseMs, operationId, terms) =>
      attemptAcquire(ctx, keys, rule, owner, leaseMs, operationId, terms),
    pacing: { by: "turn", perRelease: rule === "fair" ? 1 : 2, keepsFarBack: rule === "plain" },
    reentrant: true,
    keepsTurn: rule === "fair",
    leave: (owner, operationId) =>
      leaveParkedQueue(
        ctx,
        keys,
        owner,
        operationId,
        (fencingToken) => releaseHold(ctx, keys, owner, { readWrite, fencingToken }),
        readWrite?.writers,
      ),
  };
}

export function exclusiveOperations(
  runtime: LockRuntime,
  name: string,
  keys: LockKeys,
  /**
   * The write lock's read holds (a release hands over only once none is live) and waiting
   * writers (a writer handed the lock leaves them).
   */
  readWrite?: ReadWriteParts,
): LockOperations {
  const { ctx } = runtime;
  // Not fair: a free lock goes to whoever asks first, except in a release's reservation for the
  // head waiters; the queue only paces polls (src/wait/poll.ts).
  const acquisition = (plan: WaitPlan): AcquisitionSpec => ({
    runtime,
    name,
    watch: { lockKey: keys.lock },
    ...queuedAttempts(
      runtime,
      keys,
      exclusiveQueue(ctx, keys, "plain"),
      plan,
      DEFAULT_WAITER_TIMEOUT_MS,
    ),
    // By token: a handle whose hold ended must not extend or release a later hold of the owner.
    control: (owner, fencingToken, grantOf) => ({
      extend: (ms) => extendLease(ctx, keys, owner, ms, { fencingToken }),
      release: async (operationId) => {
        const result = await releaseHold(ctx, keys, owner, {
          operationId,
          readWrite,
          fencingToken,
          ...(grantOf === undefined ? {} : { grantOf }),
        });
        // This client's next acquisition here parks beside its first attempt.
        if (result.released && result.othersWaiting === true) runtime.contention.saw(keys.lock);
        return result;
      },
    }),
    renew: (owner, leaseMs, hold) => extendLease(ctx, keys, owner, leaseMs, hold),
  });
  return {
    kind: "lock",
    description: `Lock "${name}"`,
    acquisition,
    inspect: (owner) => inspectLock(ctx, keys, owner),
    forceRelease: () => forceRelease(ctx, keys, readWrite),
    release: (owner) => releaseHold(ctx, keys, owner, { readWrite }),
  };
}

/*
 * One acquisition attempt of the reentrant lock (and, with its own rule, the fair lock): take it,
 * re-enter it, or join / keep a place in the lock's waiter queue and learn when the turn is
 * expected (src/wait/poll.ts). Dead waiters (deadline passed) are pruned first.
 */

/**
 * The fast path of an acquisition (issue 42): when the lock is free, nobody queues or is parked
 * and this request is no re-send (no operation record), the first hold is taken with only what
 * its guarantees need: the hold, its lease, the next fencing token and the operation record
 * (5 commands). Nothing to prune, no reservation to respect (none without a queue), no
 * statistics: the hold is timed only if a waiter queues behind it (markContendedHold in
 * pace.ts). Optional keys absent (RedLock's three-key attempt) are checked as the lock again.
 * `alsoAbsent`: more keys (Lua expressions, comma-separated) that must not exist either, e.g.
 * the write lock's read holds and waiting writers.
 */
export function freeAndUncontendedFastPath(alsoAbsent = ""): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "freeAndUncontendedFastPath",
    lua: () => freeAndUncontendedFastPath(alsoAbsent),
    needs: ["lockKey", "operationKey", "owner", "leaseMs", "fenceKey", "operationTtlMs"],
  });
  const more = alsoAbsent === "" ? "" : `, ${alsoAbsent}`;
  return `if redis.call('EXISTS', lockKey, operationKey, queueKey or lockKey, parkedKey or lockKey${more}) == 0 then
  redis.call('HSET', lockKey, owner, 1)
  redis.call('PEXPIRE', lockKey, leaseMs)
  local fence = redis.call('INCR', fenceKey)
  redis.call('SET', operationKey, fence, 'PX', operationTtlMs)
  return {1, fence, 1, tonumber(leaseMs)}
end`;
}

/** Who may take a free lock: anyone (`plain`, but not into a reservation) or the head (`fair`). */
export type AcquireRule = "plain" | "fair";

/**
 * The acquire script of `rule`.
 * KEYS: 1 lock hash (owner -> hold count), 2 fence counter, 3 operation record, 4 pace hash
 *       (see LockKeys.holdStats), 5 queue (owner -> ticket), 6 timeouts (owner -> deadline),
 *       7 parked waiters (push mode, see queue/hand-off.ts)
 * ARGV: 1 owner, 2 lease ms, 3 operation record ttl ms, 4 pace ttl ms, 5 waiter timeout ms (0:
 *       a single attempt, never enqueue; -1: the last attempt of the poll budget, leave the queue
 *       when busy), 6 the waiter's last round trip ms (0: unknown), 7 claim window ms of a
 *       waiter that will park (0: it polls), 8 its operation id (names its wake list), 9 "1"
 *       when the waiter's park is already in flight (see endingParkBeside), else "0", 10 how a
 *       parked waiter is told of a hand-off: "pop" (its wake list) or "sub<n>" (the lock's
 *       hand-off channel, registered by attempt n; see handOffToParkedHead)
 * Reply: {1, fence, hold count, pttl} held; {-1} a re-sent attempt whose first run acquired,
 *        but the hold is gone since; busy: see busyTurnReply (pace.ts).
 * The plain lock's KEYS 4–7 are optional (RedLock runs it on three keys): without them nothing
 * is learnt, nobody queues, and the busy reply is {0, holder pttl}.
 */
function acquireScriptLua(rule: AcquireRule): string {
  // \`pttl\` -2: free; read once, as a busy reply answers it too.
  // Dead waiters are pruned where the queue decides who holds: by the release that hands the
  // lock on (handOffFreedLock) and by a fair attempt that finds it free (its head must be live).
  // A plain attempt takes a free lock whatever the queue holds, so it does not prune at every
  // poll (one command, issue 42): a dead place ahead only lengthens its turn until that release.
  const mayTakeFree =
    rule === "fair"
      ? `${pruneDeadWaiters("queueKey", "timeoutsKey")}
  local head = redis.call('ZRANGE', queueKey, 0, 0)[1]
  if head == nil or head == waiter then count = 1 end`
      : `if not (queueKey and ${reservedForAnother("holdStatsKey", "queueKey")}) then count = 1 end`;
  return endingParkBeside(`${freeAndUncontendedFastPath()}
${takeAnnouncedGrant("parkedKey", "operationKey")}
${replayAcquisition("operationKey", "leaseMs")}
${SERVER_NOW_MS}
${WAITER_LUA}
local count
local pttl
if redis.call('HEXISTS', lockKey, owner) == 1 then
  count = redis.call('HINCRBY', lockKey, owner, 1)
else
  pttl = redis.call('PTTL', lockKey)
  if pttl == -2 then
    ${mayTakeFree}
    if count then redis.call('HSET', lockKey, owner, 1) end
  end
end
if not count then
  if not queueKey then
    -- RedLock's attempt (a new id each round): it took nothing, and a copy of this request
    -- that the Redis client re-sends later takes nothing either (see quorum-lock/undo.ts).
    redis.call('SET', operationKey, 0, 'PX', operationTtlMs)
    return {0, pttl}
  end
  local position, queueLength = -1, nil
  local timeout = tonumber(waiterTimeoutMs)
  if timeout > 0 then
    ${joinQueue("queueKey", "timeoutsKey", { whenFirst: markContendedHold("holdStatsKey", "fenceKey"), likelyNew: PARKING_FIRST_ATTEMPT })}
  end
  ${readPace("holdStatsKey")}
  if timeout > 0 then
    ${learnRoundTrip()}
    if parkedKey then
    ${registerParked("parkedKey")}
    end
  elseif timeout < 0 then
    redis.call('ZREM', queueKey, waiter)
    redis.call('ZREM', timeoutsKey, waiter)
    if registered then redis.call('HDEL', parkedKey, waiter) end
    -- The acquisition ends here: a late copy of one of its attempts takes nothing.
    redis.call('SET', operationKey, 'left', 'PX', operationTtlMs)
  end
  ${writePace("holdStatsKey")}
  ${busyTurnReply("queueKey")}
end
local waited = false
if queueKey then
  waited = redis.call('ZREM', queueKey, waiter) == 1
  redis.call('ZREM', timeoutsKey, waiter)
  if registered then redis.call('HDEL', parkedKey, waiter) end
end
${grantExclusiveHold(`if holdStatsKey then
    ${readPace("holdStatsKey")}
    ${learnHandOff("holdStatsKey", "waited", "fence")}
    ${writePace("holdStatsKey")}
  end`)}`);
}

const ACQUIRE_KEYS = [
  "lockKey",
  "fenceKey",
  "operationKey",
  "holdStatsKey",
  "queueKey",
  "timeoutsKey",
  "parkedKey",
] as const;
/** The arguments of every queued kind's acquire script (the write lock's adds its own after them). */
export const ACQUIRE_ARGS = [
  "owner",
  "leaseMs",
  "operationTtlMs",
  "paceTtlMs",
  "waiterTimeoutMs",
  "roundTripMs",
  "claimMs",
  "parkId",
  "parkBeside",
  "wakeBy",
] as const;
const ACQUIRE_REPLIES = { 1: [4], 0: [8], [-1]: [1] };

export const ACQUIRE = defineScript({
  name: "lock.acquire",
  keys: ACQUIRE_KEYS,
  optionalKeys: ["holdStatsKey", "queueKey", "timeoutsKey", "parkedKey"],
  args: ACQUIRE_ARGS,
  replies: ACQUIRE_REPLIES,
  lua: acquireScriptLua("plain"),
});

export const FAIR_ACQUIRE = defineScript({
  name: "fairLock.acquire",
  keys: ACQUIRE_KEYS,
  args: ACQUIRE_ARGS,
  replies: ACQUIRE_REPLIES,
  lua: acquireScriptLua("fair"),
});

export async function attemptAcquire(
  ctx: OperationContext,
  keys: LockKeys,
  rule: AcquireRule,
  owner: string,
  leaseMs: number,
  operationId: string,
  waiter: WaiterTerms,
): Promise<QueuedAttemptOutcome> {
  const operation = keys.operation(operationId);
  const reply = await runScript(
    ctx,
    rule === "fair" ? FAIR_ACQUIRE : ACQUIRE,
    {
      lockKey: keys.lock,
      fenceKey: keys.fence,
      operationKey: operation,
      holdStatsKey: keys.holdStats,
      queueKey: keys.queue,
      timeoutsKey: keys.timeouts,
      parkedKey: keys.parked,
    },
    { owner, leaseMs, operationTtlMs: ctx.operationTtlMs, ...waiterArgs(waiter, operationId) },
  );
  return queuedAttemptOutcome(reply);
}

/** The arguments of a queued kind's acquire script that say how its attempt waits. */
export function waiterArgs(waiter: WaiterTerms, operationId: string) {
  return {
    paceTtlMs: PACE_TTL_MS,
    waiterTimeoutMs: waiter.timeoutMs,
    roundTripMs: Math.max(0, Math.round(waiter.roundTripMs)),
    claimMs: waiter.claimMs,
    parkId: operationId,
    parkBeside: waiter.parkBeside ? "1" : "0",
    wakeBy: waiter.wakeBy === "sub" ? `sub${waiter.registration ?? 0}.${waiter.shard ?? 0}` : "pop",
  } as const;
}

/**
 * Reads the reply of a queued kind's acquire script (the plain and fair lock's, the write
 * lock's): {1, fence, …} held; {-1} a re-sent attempt whose first run acquired, and that hold
 * is gone since; else busy, in busyTurnReply's shape (pace.ts), or {0, pttl} without a queue.
 */
export function queuedAttemptOutcome(reply: readonly number[]): QueuedAttemptOutcome {
  const [status, value, position, hold, deviation, cycle, heldFor, waiters] = reply;
  if (status === 1) return { kind: "acquired", fencingToken: value ?? 0 };
  const pttl = status === 0 ? value : undefined;
  const holderTtlMs = ttlOrNull(pttl);
  return {
    kind: "busy",
    holderTtlMs,
    ...(status === -1 ? { operationSpent: true } : {}),
    queue: {
      position: position ?? -1,
      locked: pttl !== undefined && pttl !== -2,
      holderTtlMs,
      holdMs: knownOrNull(hold),
      holdDeviationMs: knownOrNull(deviation),
      cycleMs: knownOrNull(cycle),
      heldForMs: knownOrNull(heldFor),
      waiters: knownOrNull(waiters),
    },
  };
}

/**
 * The operations on an exclusive hold hash, shared by every exclusive kind: the fair and write
 * locks replace only the acquisition.
 */

import type { OperationContext } from "../../hold/context.js";
import type { LockKeys, ReadWriteLockKeys } from "../../hold/keys.js";
import { leaveParkedQueue } from "../../hold/queue/leave.js";
import type { AcquisitionSpec } from "../../wait/acquire.js";
import type { WaitPlan } from "../../wait/attempt.js";
import { DEFAULT_WAITER_TIMEOUT_MS, type QueuedKind, queuedAttempts } from "../../wait/queued.js";
import type { LockRuntime } from "../../wait/runtime.js";
import type { LockOperations } from "../single-name-lock.js";
import { type AcquireRule, attemptAcquire } from "./acquire.js";
import { extendLease } from "./extend.js";
import { forceRelease } from "./force-release.js";
import { inspectLock } from "./inspect.js";
import { releaseHold } from "./release.js";

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
  // head waiters; the queue only paces polls (src/wait/turn.ts).
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
    control: (owner, fencingToken) => ({
      extend: (ms) => extendLease(ctx, keys, owner, ms, { fencingToken }),
      release: async (operationId) => {
        const result = await releaseHold(ctx, keys, owner, {
          operationId,
          readWrite,
          fencingToken,
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

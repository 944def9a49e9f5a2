/**
 * The operations on an exclusive hold hash (owner -> hold count, one fence counter), which every
 * exclusive kind on one name shares: the plain lock uses them all; the fair lock and the write
 * lock replace the acquisition and keep the rest.
 */
import type { AcquisitionSpec } from "../acquisition.js";
import type { LockKeys, ReadWriteLockKeys } from "../keys.js";
import type { LockRuntime } from "../runtime.js";
import type { LockOperations } from "../single-name-lock.js";
import { extendLease } from "./extend.js";
import { forceRelease } from "./force-release.js";
import { inspectLock } from "./inspect.js";
import { releaseHold } from "./release.js";
import {
  DEFAULT_WAITER_TIMEOUT_MS,
  exclusiveQueue,
  peekWaitPlan,
  queuedAttempts,
} from "./waiting.js";

/** The reentrant lock's operations on `keys`. */
export function exclusiveOperations(
  runtime: LockRuntime,
  name: string,
  keys: LockKeys,
  /**
   * The write lock's read holds (a release hands over only once none is live) and waiting
   * writers (a writer handed the lock leaves them).
   */
  readWrite?: Pick<ReadWriteLockKeys, "reads" | "writers">,
): LockOperations & { acquisition(options?: unknown, defaultWaitMs?: number): AcquisitionSpec } {
  const { ctx } = runtime;
  // Not fair: a free lock goes to whoever asks first, except into a release's reservation for
  // the head waiters. Waiters keep a place in the queue to pace their polls (src/wait/turn.ts).
  const acquisition = (
    options?: unknown,
    defaultWaitMs = Number.POSITIVE_INFINITY,
  ): AcquisitionSpec => ({
    runtime,
    name,
    watch: { lockKey: keys.lock },
    ...queuedAttempts(
      ctx,
      keys,
      exclusiveQueue(ctx, keys, "plain"),
      peekWaitPlan(options, runtime, defaultWaitMs),
      DEFAULT_WAITER_TIMEOUT_MS,
    ),
    // A handle's extend and release name its hold by its token: a handle whose hold ended (its
    // lease ran out) must not extend or release a later hold of the same owner.
    control: (owner, fencingToken) => ({
      extend: (ms) => extendLease(ctx, keys, owner, ms, { fencingToken }),
      release: async (operationId) => {
        const result = await releaseHold(ctx, keys, owner, {
          operationId,
          readWrite,
          fencingToken,
        });
        // Others wait: this client's next acquisition here parks beside its first attempt.
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

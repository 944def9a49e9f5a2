import { checkLockName } from "../../validate.js";
import type { AcquireOptions, AcquisitionSpec } from "../acquisition.js";
import { registerLockInternals } from "../internals.js";
import { type LockKeys, lockKeys } from "../keys.js";
import { DEFAULT_WAITER_TIMEOUT_MS, peekWaitPlan, queuedAttempts } from "../queue/waiting.js";
import type { LockRuntime } from "../runtime.js";
import { type LockOperations, SingleNameLock } from "../single-name-lock.js";
import { extendLease } from "./extend.js";
import { forceRelease } from "./force-release.js";
import { inspectLock } from "./inspect.js";
import { releaseHold } from "./release.js";

export type { AcquireOptions };

/** The reentrant lock's operations on `keys`, which the fair lock takes over in part. */
export function lockOperations(runtime: LockRuntime, name: string, keys: LockKeys): LockOperations {
  const { ctx } = runtime;
  // Not fair: a free lock goes to whoever asks first, except into a release's reservation for
  // the head waiter. Waiters keep a place in the queue only to pace their polls.
  const acquisition = (options: unknown, defaultWaitMs: number): AcquisitionSpec => ({
    runtime,
    name,
    watch: { lockKey: keys.lock },
    ...queuedAttempts(
      ctx,
      keys,
      "plain",
      peekWaitPlan(options, runtime, defaultWaitMs),
      DEFAULT_WAITER_TIMEOUT_MS,
    ),
    control: (owner) => ({
      extend: (ms) => extendLease(ctx, keys, owner, ms),
      release: (operationId) => releaseHold(ctx, keys, owner, operationId),
    }),
    renew: (owner, leaseMs) => extendLease(ctx, keys, owner, leaseMs),
  });
  return {
    kind: "lock",
    description: `Lock "${name}"`,
    acquisition,
    inspect: (owner) => inspectLock(ctx, keys, owner),
    forceRelease: () => forceRelease(ctx, keys),
    release: (owner) => releaseHold(ctx, keys, owner),
  };
}

export class Lock extends SingleNameLock {
  readonly name: string;

  /**
   * @internal Use `client.lock(name)`. `operations` lets the fair lock replace the parts that
   * differ (acquisition, release) over the same keys.
   */
  constructor(
    runtime: LockRuntime,
    name: unknown,
    operations?: (name: string, base: LockOperations) => LockOperations,
  ) {
    const checked = checkLockName(name);
    const keys = lockKeys(runtime.prefix, checked);
    const base = lockOperations(runtime, checked, keys);
    const chosen = operations ? operations(checked, base) : base;
    super(runtime, chosen);
    this.name = checked;
    registerLockInternals(this, { runtime, keys, kind: chosen.kind });
  }
}

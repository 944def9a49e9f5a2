/**
 * The operations on an exclusive hold hash (owner -> hold count, one fence counter), which every
 * exclusive kind on one name shares: the plain lock uses them all; the fair lock and the write
 * lock replace the acquisition (and the fair lock the release) and keep the rest.
 */
import type { AcquisitionSpec } from "../acquisition.js";
import type { LockKeys } from "../keys.js";
import type { LockRuntime } from "../runtime.js";
import type { LockOperations } from "../single-name-lock.js";
import { attemptAcquire } from "./acquire.js";
import { extendLease } from "./extend.js";
import { forceRelease } from "./force-release.js";
import { inspectLock } from "./inspect.js";
import { releaseHold } from "./release.js";

/** The reentrant lock's operations on `keys`. */
export function exclusiveOperations(
  runtime: LockRuntime,
  name: string,
  keys: LockKeys,
): LockOperations & { acquisition(): AcquisitionSpec } {
  const { ctx } = runtime;
  const spec: AcquisitionSpec = {
    runtime,
    name,
    watch: { lockKey: keys.lock },
    attempt: (owner, leaseMs, operationId) =>
      attemptAcquire(ctx, keys, owner, leaseMs, operationId),
    control: (owner) => ({
      extend: (ms) => extendLease(ctx, keys, owner, ms),
      release: (operationId) => releaseHold(ctx, keys, owner, operationId),
    }),
    renew: (owner, leaseMs) => extendLease(ctx, keys, owner, leaseMs),
  };
  return {
    kind: "lock",
    description: `Lock "${name}"`,
    acquisition: () => spec,
    inspect: (owner) => inspectLock(ctx, keys, owner),
    forceRelease: () => forceRelease(ctx, keys),
    release: (owner) => releaseHold(ctx, keys, owner),
  };
}

/**
 * The write side of a read-write lock: one writer, reentrant, with fencing tokens. Its hold is a
 * reentrant lock's hash, so extend, release and inspection are the reentrant lock's operations;
 * acquisition also waits for read holds to end, registers the waiting writer (writer
 * preference), refuses an upgrade from read holds with LockUpgradeError, and queues its waiters
 * the plain lock's way (src/wait/acquire.ts).
 */

import type { LockHandle } from "../../hold/handle.js";
import type { ReadWriteLockKeys } from "../../hold/script.js";
import type { AcquireOptions, AcquisitionSpec } from "../../wait/acquire.js";
import { type QueuedKind, queuedAttempts } from "../../wait/acquire.js";
import type { WaitPlan } from "../../wait/attempt.js";
import type { LockRuntime } from "../../wait/runtime.js";
import { exclusiveOperations, exclusiveQueue } from "../exclusive/lock.js";
import { SingleNameLock } from "../single-name-lock.js";
import type { ReadWriteSettings, ReadWriteSide } from "./settings.js";
import { attemptWriteAcquire } from "./write-acquire.js";

/**
 * The write side of a read-write lock (`readWriteLock.writeLock()`): one writer, reentrant.
 * Deliberately not a subclass of Lock, although it has the same methods: a Lock's plain
 * acquisition on this hash would ignore readers, so a write lock must never pass for a Lock
 * (e.g. as a member of a MultiLock).
 */
export class WriteLock extends SingleNameLock {
  readonly #settings: ReadWriteSettings;

  /** @internal Use `client.readWriteLock(name).writeLock()`. */
  constructor({ runtime, keys, name, settings }: ReadWriteSide) {
    // Its release hands over to a parked writer only once no read hold is live.
    const base = exclusiveOperations(runtime, name, keys, keys);
    super(runtime, name, {
      ...base,
      kind: "writeLock",
      description: `The write lock "${name}"`,
      acquisition: (plan) => this.#spec(runtime, keys, base.acquisition(plan), plan),
    });
    this.#settings = settings;
  }

  /**
   * Acquires the write lock once no other owner holds it for reading or writing, waiting as long
   * as `waitMs` allows. Throws LockUpgradeError at once if this owner holds read holds but not
   * the write lock; LockWaitTimeoutError, LockAbortedError or LockBudgetExceededError when the
   * wait ends without it.
   * @example
   * await using writing = await client.readWriteLock("catalog").writeLock().acquire();
   */
  override acquire(options?: AcquireOptions): Promise<LockHandle> {
    return super.acquire(options);
  }

  #spec(
    runtime: LockRuntime,
    keys: ReadWriteLockKeys,
    base: AcquisitionSpec,
    plan: WaitPlan,
  ): AcquisitionSpec {
    const { ctx } = runtime;
    const { writerPreference, waiterTimeoutMs } = this.#settings;
    // Writers queue like the plain lock's waiters (not fair among themselves: two aim at each
    // release), and keep the waiter timeout as their bound: with writer preference, readers
    // wait behind a registered writer, so a dead one must drop out within it.
    const writers: QueuedKind = {
      ...exclusiveQueue(ctx, keys, "plain", keys),
      attempt: (owner, leaseMs, operationId, terms) =>
        attemptWriteAcquire(
          ctx,
          keys,
          this.name,
          writerPreference,
          owner,
          leaseMs,
          operationId,
          terms,
        ),
      pacing: { by: "turn", perRelease: 2, keepsFarBack: false },
    };
    return { ...base, ...queuedAttempts(runtime, keys, writers, plan, waiterTimeoutMs) };
  }
}

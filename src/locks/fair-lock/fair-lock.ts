import type { OperationContext } from "../../hold/context.js";
import type { LockHandle } from "../../hold/handle.js";
import { queueLength } from "../../hold/queue/length.js";
import { type FairLockKeys, fairLockKeys } from "../../hold/script.js";
import { checkLockName, checkOptions } from "../../validate.js";
import type { AcquireOptions } from "../../wait/acquire.js";
import { checkWaiterTimeout, type QueueOptions, queuedAttempts } from "../../wait/acquire.js";
import type { LockRuntime } from "../../wait/runtime.js";
import { exclusiveOperations, exclusiveQueue } from "../exclusive/lock.js";
import { registerLockInternals, SingleNameLock } from "../single-name-lock.js";

/** Options of `client.fairLock(name, options)`. */
export type FairLockOptions = QueueOptions;

/**
 * The fair lock (Redisson RFairLock): the exclusive hold hash of the plain lock, with its own
 * acquisition (a FIFO queue of waiters, queue-directed polling); the release is the plain lock's.
 */
export class FairLock extends SingleNameLock {
  /** How long a waiter keeps its place in the queue without polling, in ms. */
  readonly waiterTimeoutMs: number;
  readonly #keys: FairLockKeys;
  readonly #ctx: OperationContext;

  /** @internal Use `client.fairLock(name, options)`. */
  constructor(runtime: LockRuntime, name: unknown, options?: FairLockOptions) {
    const checked = checkLockName(name);
    const given = checkOptions<FairLockOptions>(options, "fair lock options", ["waiterTimeoutMs"]);
    const waiterTimeoutMs = checkWaiterTimeout(given.waiterTimeoutMs);
    const keys = fairLockKeys(runtime.prefix, checked);
    const base = exclusiveOperations(runtime, checked, keys);
    super(runtime, checked, {
      ...base,
      kind: "fairLock",
      // The fair rule, and queue-directed polling with one waiter aimed at each release.
      acquisition: (plan) => ({
        ...base.acquisition(plan),
        ...queuedAttempts(
          runtime,
          keys,
          exclusiveQueue(runtime.ctx, keys, "fair"),
          plan,
          waiterTimeoutMs,
        ),
      }),
    });
    this.waiterTimeoutMs = waiterTimeoutMs;
    this.#keys = keys;
    this.#ctx = runtime.ctx;
    registerLockInternals(this, { runtime, keys, kind: "fairLock" });
  }

  /**
   * Acquires the lock in turn, waiting as long as `waitMs` allows (default: until acquired,
   * aborted or out of poll budget). A waiter that gives up leaves the queue before it throws
   * LockWaitTimeoutError, LockAbortedError or LockBudgetExceededError.
   * @example
   * await using held = await client.fairLock("payouts").acquire({ waitMs: 10_000 });
   */
  override acquire(options?: AcquireOptions): Promise<LockHandle> {
    return super.acquire(options);
  }

  /**
   * Like `acquire()`, but resolves to null when `waitMs` (default 0) passes. With `waitMs: 0` it
   * makes one attempt and never joins the queue: it succeeds only if the lock is free and nobody
   * is waiting (or this owner re-enters).
   */
  override tryAcquire(options?: AcquireOptions): Promise<LockHandle | null> {
    return super.tryAcquire(options);
  }

  /** Number of live waiters in the queue (one read-only request). */
  queueLength(): Promise<number> {
    return queueLength(this.#ctx, this.#keys.timeouts);
  }
}

import { checkOptions } from "../../validate.js";
import type { AcquireOptions, AcquisitionSpec } from "../acquisition.js";
import type { OperationContext } from "../context.js";
import type { LockHandle } from "../handle.js";
import { type FairLockKeys, fairLockKeys } from "../keys.js";
import { extendLease } from "../lock/extend.js";
import { Lock } from "../lock/lock.js";
import { queueLength } from "../queue/length.js";
import {
  checkWaiterTimeout,
  peekWaitPlan,
  type QueueOptions,
  queuedAttempts,
} from "../queue/waiting.js";
import type { LockRuntime } from "../runtime.js";
import { releaseFairHold } from "./release.js";

/** Options of `client.fairLock(name, options)`. */
export type FairLockOptions = QueueOptions;

export class FairLock extends Lock {
  /** How long a waiter keeps its place in the queue without polling, in ms. */
  readonly waiterTimeoutMs: number;
  readonly #keys: FairLockKeys;
  readonly #ctx: OperationContext;

  /** @internal Use `client.fairLock(name, options)`. */
  constructor(runtime: LockRuntime, name: unknown, options?: FairLockOptions) {
    super(runtime, name, (_checked, base) => ({
      ...base,
      kind: "fairLock",
      acquisition: (given, defaultWaitMs) => this.#spec(runtime, given, defaultWaitMs),
      release: (owner) => releaseFairHold(runtime.ctx, this.#keys, owner),
    }));
    const given = checkOptions<FairLockOptions>(options, "fair lock options", ["waiterTimeoutMs"]);
    this.waiterTimeoutMs = checkWaiterTimeout(given.waiterTimeoutMs);
    this.#keys = fairLockKeys(runtime.prefix, this.name);
    this.#ctx = runtime.ctx;
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
  /** The spec of one acquisition: its pacing state lives as long as the call. */
  #spec(runtime: LockRuntime, options: unknown, defaultWaitMs: number): AcquisitionSpec {
    const { ctx } = runtime;
    const keys = this.#keys;
    const plan = peekWaitPlan(options, runtime, defaultWaitMs);
    return {
      runtime,
      name: this.name,
      watch: { lockKey: keys.lock },
      ...queuedAttempts(ctx, keys, "fair", plan, this.waiterTimeoutMs),
      control: (owner) => ({
        extend: (ms) => extendLease(ctx, keys, owner, ms),
        release: (operationId) => releaseFairHold(ctx, keys, owner, operationId),
      }),
      renew: (owner, leaseMs) => extendLease(ctx, keys, owner, leaseMs),
    };
  }
}

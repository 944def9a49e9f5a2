/**
 * The write side of a read-write lock: one writer, reentrant, with fencing tokens. Its hold is a
 * reentrant lock's hash, so extend, release and inspection are the reentrant lock's operations;
 * acquisition also waits for read holds to end, registers the waiting writer (writer
 * preference), and refuses an upgrade from read holds with LockUpgradeError.
 */

import { LockUpgradeError } from "../../errors.js";
import { nextPollDelay } from "../../wait/policy.js";
import type { AcquireOptions, AcquisitionSpec, AttemptOutcome } from "../acquisition.js";
import { exclusiveOperations } from "../exclusive/operations.js";
import type { LockHandle } from "../handle.js";
import type { ReadWriteLockKeys } from "../keys.js";
import { leaveQueue } from "../queue/leave.js";
import { peekWaitPlan } from "../queue/waiting.js";
import type { LockRuntime } from "../runtime.js";
import { SingleNameLock } from "../single-name-lock.js";
import type { ReadWriteSettings, ReadWriteSide } from "./settings.js";
import { attemptWriteAcquire } from "./write-acquire.js";

/*
 * Deliberately not a subclass of Lock, although it has the same methods: a Lock's plain
 * acquisition on this hash would ignore readers, so a write lock must never pass for a Lock
 * (e.g. as a member of a MultiLock).
 */
export class WriteLock extends SingleNameLock {
  readonly #settings: ReadWriteSettings;

  /** @internal Use `client.readWriteLock(name).writeLock()`. */
  constructor({ runtime, keys, name, settings }: ReadWriteSide) {
    const base = exclusiveOperations(runtime, name, keys);
    super(runtime, name, {
      ...base,
      kind: "writeLock",
      description: `The write lock "${name}"`,
      acquisition: (options, defaultWaitMs) =>
        this.#spec(runtime, keys, base.acquisition(), options, defaultWaitMs),
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
    options: unknown,
    defaultWaitMs: number,
  ): AcquisitionSpec {
    const { ctx } = runtime;
    const { writerPreference, waiterTimeoutMs } = this.#settings;
    const plan = peekWaitPlan(options, runtime, defaultWaitMs);
    // Only a writer that will poll again registers, and only when readers must defer to it.
    const registers = plan.mayWait && writerPreference;
    const refreshMs = Math.floor(waiterTimeoutMs / 3);
    let polls = 0;
    // Whether the server may list this writer as waiting: true from the first registering
    // request until a reply says otherwise (acquired, or refused as an upgrade).
    let mayBeWaiting = false;
    return {
      ...base,
      attempt: async (owner, leaseMs, operationId) => {
        if (registers) mayBeWaiting = true;
        let outcome: AttemptOutcome;
        try {
          outcome = await attemptWriteAcquire(
            ctx,
            keys,
            owner,
            leaseMs,
            registers ? waiterTimeoutMs : 0,
            this.name,
            operationId,
          );
        } catch (error) {
          if (error instanceof LockUpgradeError) mayBeWaiting = false;
          throw error;
        }
        if (outcome.kind === "acquired") mayBeWaiting = false;
        if (outcome.kind === "acquired" || !registers) return outcome;
        // A registered writer must poll often enough to keep its registration alive.
        polls += 1;
        const backoff = nextPollDelay(
          plan.policy,
          polls,
          outcome.holderTtlMs,
          Number.POSITIVE_INFINITY,
        );
        return { ...outcome, nextPollMs: Math.min(backoff, refreshMs) };
      },
      gaveUp: async (owner) => {
        if (mayBeWaiting) await leaveQueue(ctx, [keys.writers], owner);
      },
    };
  }
}

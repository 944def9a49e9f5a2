/**
 * The write side of a read-write lock: one writer, reentrant, with fencing tokens. Its hold is a
 * reentrant lock's hash, so extend, release and inspection are the reentrant lock's operations;
 * acquisition also waits for read holds to end, registers the waiting writer (writer
 * preference), and refuses an upgrade from read holds with LockUpgradeError.
 */

import { LockUpgradeError } from "../../errors.js";
import { newOperationId } from "../../ids.js";
import { nextPollDelay } from "../../wait/policy.js";
import type { TurnView } from "../../wait/turn.js";
import type { AcquireOptions, AcquisitionSpec } from "../acquisition.js";
import { exclusiveOperations } from "../exclusive/operations.js";
import type { LockHandle } from "../handle.js";
import type { ReadWriteLockKeys } from "../keys.js";
import { leaveParkedQueue, leaveQueue } from "../queue/leave.js";
import { parkingFor } from "../queue/parking.js";
import { peekWaitPlan } from "../queue/waiting.js";
import type { LockRuntime } from "../runtime.js";
import { SingleNameLock } from "../single-name-lock.js";
import type { ReadWriteSettings, ReadWriteSide } from "./settings.js";
import { attemptWriteAcquire, type WriteAttemptOutcome } from "./write-acquire.js";

/*
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
    // Push mode: the writer parks, queued in arrival order, and a release hands the lock over.
    const parking = parkingFor(ctx, keys, plan);
    // Only a writer that will ask again registers, and only when readers must defer to it.
    const registers = plan.mayWait && writerPreference;
    const refreshMs = Math.floor(waiterTimeoutMs / 3);
    let polls = 0;
    // Whether the server may list this writer as waiting or parked: true from the first
    // registering request until a reply says otherwise (acquired, or refused as an upgrade).
    let mayBeWaiting = false;
    let lastOperationId = "";
    return {
      ...base,
      attempt: async (owner, leaseMs, operationId, wait) => {
        polls += 1;
        lastOperationId = operationId;
        if (parking?.registered) {
          const outcome = await parking.awaitPark(operationId, wait);
          if (outcome.kind === "acquired") mayBeWaiting = false;
          return outcome;
        }
        if (registers || parking !== undefined) mayBeWaiting = true;
        const sentAt = Date.now();
        const last = polls >= plan.policy.maxPolls;
        const beside =
          parking?.beforeAttempt(operationId, wait, polls === 1, last, sentAt) ?? false;
        let outcome: WriteAttemptOutcome;
        try {
          const attempt = attemptWriteAcquire(
            ctx,
            keys,
            owner,
            leaseMs,
            {
              waiterTimeoutMs: registers ? (parking?.placeMs ?? waiterTimeoutMs) : 0,
              ...(parking && !last
                ? { park: { claimMs: parking.claimMs, placeMs: parking.placeMs, beside } }
                : {}),
            },
            this.name,
            operationId,
          );
          const granted = await parking?.grantBeforeAttempt(attempt);
          if (granted !== undefined) {
            if (granted.kind === "acquired") mayBeWaiting = false;
            return granted;
          }
          outcome = await attempt;
        } catch (error) {
          if (error instanceof LockUpgradeError) mayBeWaiting = false;
          throw error;
        }
        if (outcome.kind === "acquired") mayBeWaiting = false;
        if (parking !== undefined) {
          if (outcome.kind === "busy" && outcome.position >= 0 && !outcome.operationSpent) {
            parking.registeredBy(writerView(outcome.holderTtlMs, outcome.position), sentAt);
            return { kind: "busy", holderTtlMs: outcome.holderTtlMs, nextPollMs: 0 };
          }
          parking.notRegistered(outcome.kind === "acquired" && polls === 1);
        }
        if (outcome.kind === "acquired" || !registers) return outcome;
        // A registered writer must poll often enough to keep its registration alive.
        const backoff = nextPollDelay(
          plan.policy,
          polls,
          outcome.holderTtlMs,
          Number.POSITIVE_INFINITY,
        );
        return { ...outcome, nextPollMs: Math.min(backoff, refreshMs) };
      },
      gaveUp: async (owner) => {
        if (!mayBeWaiting) return;
        if (parking === undefined) {
          await leaveQueue(ctx, [keys.writers], owner);
          return;
        }
        await leaveParkedQueue(
          ctx,
          keys,
          owner,
          lastOperationId,
          () => base.control(owner).release(newOperationId()),
          keys.writers,
        );
      },
    };
  }
}

/**
 * A parked writer's view of its turn: the holders' leases end in `busyForMs` (a holder that
 * died hands nothing over), and `position` parked writers are ahead of it.
 */
function writerView(busyForMs: number | null, position: number): TurnView {
  return {
    position,
    locked: true,
    holderTtlMs: busyForMs,
    holdMs: null,
    holdDeviationMs: null,
    cycleMs: null,
    heldForMs: null,
  };
}

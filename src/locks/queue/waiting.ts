/**
 * What queued waiters share (the fair lock's queue, the read-write lock's waiting writers): how
 * long a silent waiter keeps its place, and a look ahead at the acquire options to know whether
 * this acquisition may wait at all and with which polling policy.
 */
import { QUEUE_DEFAULTS } from "../../defaults.js";
import { checkDuration } from "../../validate.js";
import { resolveWaitPolicy, type WaitPolicy } from "../../wait/policy.js";
import { TurnPacer } from "../../wait/turn.js";
import type { AcquisitionSpec } from "../acquisition.js";
import type { OperationContext } from "../context.js";
import { type AcquireRule, attemptAcquire } from "../exclusive/acquire.js";
import type { LockKeys } from "../keys.js";
import type { LockRuntime } from "../runtime.js";
import { leaveQueue } from "./leave.js";

/** Default `waiterTimeoutMs`: a waiter that has not polled for 5 s is presumed dead. */
export const DEFAULT_WAITER_TIMEOUT_MS = QUEUE_DEFAULTS.waiterTimeoutMs;
/** Smallest `waiterTimeoutMs`: a waiter polls every third of it and needs room for round trips. */
export const MIN_WAITER_TIMEOUT_MS = QUEUE_DEFAULTS.minWaiterTimeoutMs;

export interface QueueOptions {
  /**
   * How long a waiter keeps its place without polling, in ms. Every poll refreshes the waiter's
   * deadline (server time) and waiters poll at least every third of this, so only a waiter that
   * crashed or lost its connection is dropped; nobody waits behind the dead for longer than
   * this. At least 1000. Default 5000.
   */
  waiterTimeoutMs?: number;
}

/** Validates the options of `client.fairLock()` / `client.readWriteLock()`'s queue part. */
export function checkWaiterTimeout(value: unknown): number {
  return value === undefined
    ? DEFAULT_WAITER_TIMEOUT_MS
    : checkDuration(value, "waiterTimeoutMs", { min: MIN_WAITER_TIMEOUT_MS });
}

/** What one acquisition call will do, read ahead of the shared acquisition flow. */
export interface WaitPlan {
  /** False for a single attempt (`waitMs: 0`, tryAcquire's default): it must never enqueue. */
  readonly mayWait: boolean;
  /** The polling policy the flow will use (the call's `wait` over the client's). */
  readonly policy: WaitPolicy;
}

/**
 * Reads `waitMs` and `wait` from acquire options without judging them: the shared acquisition
 * flow validates the same options before any request, so a bad value is reported there.
 */
export function peekWaitPlan(
  options: unknown,
  runtime: LockRuntime,
  defaultWaitMs: number,
): WaitPlan {
  const given: { waitMs?: unknown; wait?: unknown } =
    typeof options === "object" && options !== null ? options : {};
  let policy = runtime.waitPolicy;
  try {
    if (given.wait !== undefined) policy = resolveWaitPolicy(given.wait, runtime.waitPolicy);
  } catch {
    // acquireHold rejects the same `wait` before any request.
  }
  const waitMs = given.waitMs === undefined ? defaultWaitMs : given.waitMs;
  return { mayWait: waitMs !== 0, policy };
}

/**
 * The attempts of one acquisition of a queued kind (plain or fair lock): the first failed attempt
 * takes a ticket (unless the call may not wait), every busy reply paces the next poll by the turn
 * it announces (src/wait/turn.ts), and a waiter that gives up leaves the queue.
 */
export function queuedAttempts(
  ctx: OperationContext,
  keys: LockKeys,
  rule: AcquireRule,
  plan: WaitPlan,
  waiterTimeoutMs: number,
): Pick<AcquisitionSpec, "attempt" | "gaveUp"> {
  const timeout = plan.mayWait ? waiterTimeoutMs : 0;
  const pacer = new TurnPacer(
    plan.policy,
    Math.floor(waiterTimeoutMs / 3),
    rule === "fair" ? 1 : 2,
  );
  let roundTripMs = 0;
  // Whether the server may list this waiter: true from the first queueing request until a
  // reply says it holds the lock or left (the acquire script removes it from the queue then).
  let mayBeQueued = false;
  let attempts = 0;
  return {
    attempt: async (owner, leaseMs, operationId) => {
      const sentAt = Date.now();
      attempts += 1;
      // The last attempt the budget allows leaves the queue itself when busy: the wait then
      // ends in exactly `maxPolls` requests.
      const last = plan.mayWait && attempts >= plan.policy.maxPolls;
      if (plan.mayWait) mayBeQueued = true;
      const outcome = await attemptAcquire(
        ctx,
        keys,
        rule,
        owner,
        leaseMs,
        last ? -1 : timeout,
        roundTripMs,
        operationId,
      );
      roundTripMs = Date.now() - sentAt;
      if (outcome.kind === "acquired" || last) mayBeQueued = false;
      if (outcome.kind === "acquired") return outcome;
      return {
        kind: "busy",
        holderTtlMs: outcome.holderTtlMs,
        ...(plan.mayWait ? { nextPollMs: pacer.next(outcome.queue, roundTripMs) } : {}),
        ...(outcome.operationSpent ? { operationSpent: true } : {}),
      };
    },
    gaveUp: async (owner) => {
      if (mayBeQueued) await leaveQueue(ctx, [keys.queue, keys.timeouts], owner);
    },
  };
}

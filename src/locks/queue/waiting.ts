/**
 * What queued waiters share (the fair lock's queue, the read-write lock's waiting writers): how
 * long a silent waiter keeps its place, and a look ahead at the acquire options to know whether
 * this acquisition may wait at all and with which polling policy.
 */
import { QUEUE_DEFAULTS } from "../../defaults.js";
import { LockBackendError } from "../../errors.js";
import { callBlocking } from "../../transport/call.js";
import { shownSafely } from "../../transport/failures.js";
import { canBlock } from "../../transport/redis-like.js";
import { checkDuration } from "../../validate.js";
import type { RecentContention } from "../../wait/contention.js";
import { resolveWaitPolicy, type WaitPolicy } from "../../wait/policy.js";
import { TurnPacer, type TurnView } from "../../wait/turn.js";
import type { AcquisitionSpec, AttemptOutcome, AttemptWait } from "../acquisition.js";
import type { OperationContext } from "../context.js";
import { type AcquireRule, attemptAcquire } from "../exclusive/acquire.js";
import { releaseHold } from "../exclusive/release.js";
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
  /** Where the client recently had to wait (push mode parks beside the first attempt there). */
  readonly contention: RecentContention;
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
  return { mayWait: waitMs !== 0, policy, contention: runtime.contention };
}

/**
 * The attempts of one acquisition of a queued kind (plain or fair lock): the first failed attempt
 * takes a ticket (unless the call may not wait), and every busy reply either paces the next poll
 * by the turn it announces (src/wait/turn.ts) or, in push mode, is followed by a park: a blocking
 * pop on the acquisition's wake list that returns when a release hands the lock over
 * (queue/hand-off.ts) or when the turn is overdue. Where this client recently had to wait, the
 * park is sent beside the attempt rather than after its reply (src/wait/contention.ts): the
 * attempt script wakes it at once unless it registered the waiter. A waiter that gives up leaves
 * the queue.
 */
export function queuedAttempts(
  ctx: OperationContext,
  keys: LockKeys,
  rule: AcquireRule,
  plan: WaitPlan,
  waiterTimeoutMs: number,
): Pick<AcquisitionSpec, "attempt" | "gaveUp"> {
  const { policy, contention } = plan;
  // The Redis client that parks, in push mode (the acquisition checked it can block).
  const blocking =
    plan.mayWait && policy.mode === "push" && canBlock(ctx.redis) ? ctx.redis : undefined;
  const push = blocking !== undefined;
  // A parked waiter's place lasts its longest park and the way back to ask again.
  const timeout = !plan.mayWait ? 0 : push ? policy.parkMs + PARK_GRACE_MS : waiterTimeoutMs;
  const pacer = new TurnPacer(policy, Math.floor(waiterTimeoutMs / 3), rule === "fair" ? 1 : 2);
  let roundTripMs = 0;
  // Whether the server may list this waiter: true from the first queueing request until a
  // reply says it holds the lock or left (the acquire script removes it from the queue then).
  let mayBeQueued = false;
  let requests = 0;
  // Push mode: the busy reply that registered this waiter as parked, and when it was sent.
  let registered: { view: TurnView; sentAt: number } | undefined;
  // Push mode: the park in flight on this acquisition's wake list, and when its timeout lapses.
  let parking: { readonly ended: Promise<ParkEnd>; readonly endsAt: number } | undefined;
  let lastOperationId = "";

  const startPark = (
    redis: NonNullable<typeof blocking>,
    operationId: string,
    wait: AttemptWait,
    boundMs: number,
  ): NonNullable<typeof parking> => {
    const parkMs = Math.max(
      MIN_PARK_MS,
      Math.min(policy.parkMs, wait.deadline - Date.now(), boundMs),
    );
    const ended = callBlocking(
      redis,
      ["BLPOP", keys.wake(operationId), (parkMs / 1000).toFixed(3)],
      parkMs,
      ctx.retry,
      wait.signal,
      ctx.observer,
    )
      .then(wakeReply)
      .catch(
        (error: unknown): ParkEnd =>
          // Aborted: the wait loop ends on the signal and the waiter leaves the queue.
          wait.signal?.aborted ? { kind: "woken" } : { kind: "failed", error },
      );
    return { ended, endsAt: Date.now() + parkMs };
  };

  /** Waits on the park in flight for at most the bound `view` sets (it may outlast it). */
  const awaitPark = async (
    redis: NonNullable<typeof blocking>,
    operationId: string,
    wait: AttemptWait,
    view: TurnView,
    sentAt: number,
  ): Promise<AttemptOutcome> => {
    const boundAt = sentAt + parkBoundMs(view, policy.claimMs);
    parking ??= startPark(redis, operationId, wait, boundAt - Date.now());
    const ended =
      parking.endsAt <= boundAt
        ? await parking.ended
        : await settledWithin(parking.ended, Math.max(MIN_PARK_MS, boundAt - Date.now()));
    // The park sent beside the attempt outlasts this turn's bound (a holder that died hands
    // nothing over): ask again, the park still in flight; the attempt wakes it if it acquires.
    if (ended === undefined) return { kind: "busy", holderTtlMs: view.holderTtlMs, nextPollMs: 0 };
    parking = undefined;
    if (ended.kind === "failed") throw ended.error;
    if (ended.kind === "woken")
      return { kind: "busy", holderTtlMs: view.holderTtlMs, nextPollMs: 1 };
    mayBeQueued = false;
    return {
      kind: "acquired",
      fencingToken: ended.fencingToken,
      // The grant came at least `sinceRegistrationMs` after the registration reached Redis,
      // which was after it was sent: a lower bound of the hold's start on this clock.
      handOff: { leaseMs: ended.leaseMs, grantedAt: sentAt + ended.sinceRegistrationMs },
    };
  };

  return {
    attempt: async (owner, leaseMs, operationId, wait) => {
      requests += 1;
      lastOperationId = operationId;
      if (registered !== undefined && blocking !== undefined) {
        const { view, sentAt } = registered;
        registered = undefined;
        return awaitPark(blocking, operationId, wait, view, sentAt);
      }
      const sentAt = Date.now();
      // The last request the budget allows leaves the queue itself when busy: the wait then
      // ends in exactly `maxPolls` requests.
      const last = plan.mayWait && requests >= policy.maxPolls;
      const firstAttempt = requests === 1;
      if (blocking !== undefined && !last && parking === undefined) {
        if (!firstAttempt || contention.likely(keys.lock)) {
          parking = startPark(blocking, operationId, wait, Number.POSITIVE_INFINITY);
        }
      }
      const parkBeside = parking !== undefined;
      if (plan.mayWait) mayBeQueued = true;
      const outcome = await attemptAcquire(ctx, keys, rule, owner, leaseMs, operationId, {
        timeoutMs: last ? -1 : timeout,
        roundTripMs,
        claimMs: push ? policy.claimMs : 0,
        parkBeside,
      });
      roundTripMs = Date.now() - sentAt;
      if (outcome.kind === "acquired" || last) mayBeQueued = false;
      const parks = push && !last && outcome.kind === "busy" && !outcome.operationSpent;
      if (parks && outcome.queue.position >= 0) {
        contention.saw(keys.lock);
        registered = { view: outcome.queue, sentAt };
        return { kind: "busy", holderTtlMs: outcome.holderTtlMs, nextPollMs: 0 };
      }
      // Not registered: the script woke the park in flight, if any, which ends on its own.
      parking = undefined;
      if (outcome.kind === "acquired") {
        if (firstAttempt) contention.freeAtFirstAsk(keys.lock);
        return outcome;
      }
      const spent = outcome.operationSpent ? { operationSpent: true } : {};
      return {
        kind: "busy",
        holderTtlMs: outcome.holderTtlMs,
        ...(plan.mayWait ? { nextPollMs: pacer.next(outcome.queue, roundTripMs) } : {}),
        ...spent,
      };
    },
    gaveUp: async (owner) => {
      if (!mayBeQueued) return;
      const left = await leaveQueue(ctx, [keys.queue, keys.timeouts], owner, {
        parkedKey: keys.parked,
        lockKey: keys.lock,
        operationKey: keys.operation(lastOperationId),
      });
      // A hand-off reached this waiter as it gave up: pass the lock on.
      if (left === "handedOff") await releaseHold(ctx, keys, owner);
    },
  };
}

/** How a park ended: a grant (the waiter holds the lock), woken without one, or failed. */
type ParkEnd =
  | {
      readonly kind: "granted";
      readonly fencingToken: number;
      readonly leaseMs: number;
      readonly sinceRegistrationMs: number;
    }
  | { readonly kind: "woken" }
  | { readonly kind: "failed"; readonly error: unknown };

/** `promise`'s value if it settles within `ms`, else undefined (it keeps running). */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, ms));
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Parks last at least this long (a blocking pop's timeout 0 would mean forever). */
const MIN_PARK_MS = 10;
/** How long a parked waiter keeps its place after its park ends, to ask again (ms). */
export const PARK_GRACE_MS = 1_000;
/** A park at the head ends this long after the holder's lease would (ms): then it is free. */
const PARK_PAST_LEASE_MS = 25;

/**
 * How long a waiter that got `view` parks at most: at the head, until just after the holder's
 * lease ends (a holder that crashed hands nothing over); behind it, until well after its turn is
 * expected (the claim window after it), so that a grant to a waiter that died while parked is
 * noticed soon after its claim window ran out.
 */
export function parkBoundMs(view: TurnView, claimMs: number): number {
  let bound = Number.POSITIVE_INFINITY;
  if (view.holderTtlMs !== null) {
    bound = view.holderTtlMs + view.position * claimMs + PARK_PAST_LEASE_MS;
  }
  if (view.position >= 1 && view.holdMs !== null) {
    const cycle = view.cycleMs ?? view.holdMs;
    const current = view.locked ? Math.max(0, view.holdMs - (view.heldForMs ?? 0)) : 0;
    bound = Math.min(bound, current + view.position * cycle + claimMs);
  }
  return bound;
}

/**
 * A park's reply: null when it timed out; else `[key, message]` with `grant <fence> <lease ms>
 * <ms since registration>` (a hand-off) or `none` (an attempt beside it did not register it).
 */
function wakeReply(reply: unknown): ParkEnd {
  if (reply === null) return { kind: "woken" };
  const message = Array.isArray(reply) ? reply[1] : undefined;
  if (message === "none") return { kind: "woken" };
  const match = typeof message === "string" ? /^grant (\d+) (\d+) (\d+)$/.exec(message) : null;
  if (match === null) {
    throw new LockBackendError(
      `The wake list of a parked waiter held an unexpected reply: ${shownSafely(reply)}.`,
    );
  }
  return {
    kind: "granted",
    fencingToken: Number(match[1]),
    leaseMs: Number(match[2]),
    sinceRegistrationMs: Number(match[3]),
  };
}

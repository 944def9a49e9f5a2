/**
 * How the queued kinds wait (the plain, fair and write lock share the queue of LockKeys): how
 * long a silent waiter keeps its place, a look ahead at the acquire options to know whether this
 * acquisition may wait at all and with which polling policy, and the attempts of one
 * acquisition, paced by its turn or parked.
 */
import { QUEUE_DEFAULTS } from "../../defaults.js";
import { checkDuration } from "../../validate.js";
import type { RecentContention } from "../../wait/contention.js";
import { resolveWaitPolicy, type WaitPolicy } from "../../wait/policy.js";
import { TurnPacer } from "../../wait/turn.js";
import type { AcquisitionSpec } from "../acquisition.js";
import type { OperationContext } from "../context.js";
import type { LockKeys, ReadWriteLockKeys } from "../keys.js";
import { leaveParkedQueue } from "../queue/leave.js";
import { type BlockingPops, type ParkedSiblings, parkingFor } from "../queue/parking.js";
import type { LockRuntime } from "../runtime.js";
import {
  type AcquireRule,
  attemptAcquire,
  type QueuedAttemptOutcome,
  type WaiterTerms,
} from "./acquire.js";
import { releaseHold } from "./release.js";

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
  /** This client's parked acquisitions per lock and owner (push mode). */
  readonly parkedSiblings: ParkedSiblings;
  /** Whether this client's backend serves blocking pops (push mode). */
  readonly blockingPops: BlockingPops;
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
  return {
    mayWait: waitMs !== 0,
    policy,
    contention: runtime.contention,
    parkedSiblings: runtime.parkedSiblings,
    blockingPops: runtime.blockingPops,
  };
}

/**
 * What `queuedAttempts` needs of a queued kind: its acquire script behind one signature, and how
 * its waiters share the releases.
 */
export interface QueuedKind {
  /** One attempt; a busy reply carries the waiter's view of its turn. */
  attempt(
    owner: string,
    leaseMs: number,
    operationId: string,
    terms: WaiterTerms,
  ): Promise<QueuedAttemptOutcome>;
  /** Waiters aimed at each release (TurnState.perRelease): 1 where only the head may take it. */
  readonly perRelease: 1 | 2;
  /**
   * Whether a waiter far back may ask to be kept longer than the waiter timeout (TurnPacer):
   * only where the queue merely paces, so that nobody waits behind a dead waiter longer.
   */
  readonly keepsFarBack: boolean;
  /**
   * A read-write lock's read holds and waiting writers: a writer that gives up leaves the waiting
   * writers too, and a hand-off it received meanwhile is released the write lock's way.
   */
  readonly readWrite?: Pick<ReadWriteLockKeys, "reads" | "writers">;
}

/** The plain or fair lock's attempts (acquire rule `rule`) on `keys`. */
export function exclusiveQueue(
  ctx: OperationContext,
  keys: LockKeys,
  rule: AcquireRule,
): QueuedKind {
  return {
    attempt: (owner, leaseMs, operationId, terms) =>
      attemptAcquire(ctx, keys, rule, owner, leaseMs, operationId, terms),
    perRelease: rule === "fair" ? 1 : 2,
    keepsFarBack: rule === "plain",
  };
}

/**
 * The attempts of one acquisition of a queued kind (plain, fair or write lock): the first failed
 * attempt takes a ticket (unless the call may not wait), and every busy reply either paces the
 * next poll by the turn it announces (src/wait/turn.ts) or, in push mode, is followed by a park:
 * a blocking pop on the acquisition's wake list that returns when a release hands the lock over
 * (queue/hand-off.ts) or when the turn is overdue. Where this client recently had to wait, the
 * park is sent beside the attempt rather than after its reply (src/wait/contention.ts): the
 * attempt script wakes it at once unless it registered the waiter. A waiter that gives up leaves
 * the queue.
 */
export function queuedAttempts(
  ctx: OperationContext,
  keys: LockKeys,
  kind: QueuedKind,
  plan: WaitPlan,
  waiterTimeoutMs: number,
): Pick<AcquisitionSpec, "attempt" | "gaveUp"> {
  const { policy } = plan;
  const parking = parkingFor(ctx, keys, plan);
  const timeout = !plan.mayWait ? 0 : (parking?.placeMs ?? waiterTimeoutMs);
  // A polling waiter may ask the server to keep its place longer than the waiter timeout while
  // its turn is far off, where the kind allows (TurnPacer); a parked one's place is its park's.
  const pacer = new TurnPacer(
    policy,
    Math.floor(waiterTimeoutMs / 3),
    kind.perRelease,
    Math.random,
    kind.keepsFarBack && parking === undefined,
  );
  let roundTripMs = 0;
  // Whether the server may list this waiter: true from the first queueing request until a
  // reply says it holds the lock or left (the acquire script removes it from the queue then).
  let mayBeQueued = false;
  let requests = 0;
  let lastOperationId = "";

  // One request of the acquisition: an attempt, or the wait on its park.
  const attemptOnce: AcquisitionSpec["attempt"] = async (owner, leaseMs, operationId, wait) => {
    requests += 1;
    lastOperationId = operationId;
    if (parking?.registered) {
      return parking.awaitPark(operationId, wait);
    }
    const sentAt = Date.now();
    // The last request the budget allows leaves the queue itself when busy: the wait then
    // ends in exactly `maxPolls` requests.
    const last = plan.mayWait && requests >= policy.maxPolls;
    const parkBeside =
      parking?.beforeAttempt(operationId, wait, requests === 1, last, sentAt) ?? false;
    if (plan.mayWait) mayBeQueued = true;
    const attempt = kind.attempt(owner, leaseMs, operationId, {
      timeoutMs: last ? -1 : timeout === 0 ? 0 : timeout + pacer.keepExtraMs,
      roundTripMs,
      claimMs: parking?.claimMs ?? 0,
      parkBeside,
    });
    const granted = await parking?.grantBeforeAttempt(attempt);
    if (granted !== undefined) return granted;
    const outcome = await attempt;
    roundTripMs = Date.now() - sentAt;
    if (outcome.kind !== "busy" || last) mayBeQueued = false;
    if (parking !== undefined) {
      const registered =
        parking.active &&
        !last &&
        outcome.kind === "busy" &&
        !outcome.operationSpent &&
        outcome.queue.position >= 0;
      if (registered) {
        parking.registeredBy(outcome.queue, sentAt, owner);
        return { kind: "busy", holderTtlMs: outcome.holderTtlMs, nextPollMs: 0 };
      }
      parking.notRegistered(outcome.kind === "acquired" && requests === 1);
    }
    if (outcome.kind === "refused") throw outcome.error;
    if (outcome.kind === "acquired") return outcome;
    const spent = outcome.operationSpent ? { operationSpent: true } : {};
    return {
      kind: "busy",
      holderTtlMs: outcome.holderTtlMs,
      ...(plan.mayWait ? { nextPollMs: pacer.next(outcome.queue, roundTripMs) } : {}),
      ...spent,
    };
  };

  return {
    // However it came (a grant, a replayed hold, an attempt), a hold leaves the queue, and the
    // owner's other parked acquisitions here re-enter.
    attempt: async (owner, leaseMs, operationId, wait) => {
      const outcome = await attemptOnce(owner, leaseMs, operationId, wait);
      if (outcome.kind === "acquired") {
        mayBeQueued = false;
        parking?.held(owner);
      }
      return outcome;
    },
    gaveUp: async (owner) => {
      parking?.leaveSiblings();
      if (!mayBeQueued) return;
      await leaveParkedQueue(
        ctx,
        keys,
        owner,
        lastOperationId,
        (fencingToken) =>
          releaseHold(ctx, keys, owner, { readWrite: kind.readWrite, fencingToken }),
        kind.readWrite?.writers,
      );
    },
  };
}

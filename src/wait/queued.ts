/**
 * How the queued kinds (plain, fair and write lock, sharing the queue of LockKeys) wait: each busy
 * reply either paces the next poll by the turn it announces (turn.ts) or, in push mode, is
 * followed by a park (parking.ts); a waiter that gives up leaves the queue. The kind supplies its
 * attempt script and its leave.
 */
import { QUEUE_DEFAULTS } from "../defaults.js";
import type { LockKeys } from "../locks/keys.js";
import type { LockRuntime } from "../locks/runtime.js";
import { checkDuration } from "../validate.js";
import type { AcquisitionSpec } from "./acquire.js";
import type { QueuedAttemptOutcome, WaiterTerms, WaitPlan } from "./attempt.js";
import { parkingFor } from "./parking.js";
import { TurnPacer } from "./turn.js";

/** Default `waiterTimeoutMs`: a waiter that has not polled for 5 s is presumed dead. */
export const DEFAULT_WAITER_TIMEOUT_MS = QUEUE_DEFAULTS.waiterTimeoutMs;
/** Smallest `waiterTimeoutMs`: a waiter polls every third of it and needs room for round trips. */
export const MIN_WAITER_TIMEOUT_MS = QUEUE_DEFAULTS.minWaiterTimeoutMs;

export interface QueueOptions {
  /**
   * How long a waiter keeps its place without polling, in ms. Every poll refreshes the waiter's
   * deadline (server time) and waiters poll at least every third of this, so only a waiter that
   * crashed or lost its connection is dropped; nobody waits behind the dead for longer than
   * this. At least 1000.
   * @default 5000
   */
  waiterTimeoutMs?: number;
}

/** Validates the options of `client.fairLock()` / `client.readWriteLock()`'s queue part. */
export function checkWaiterTimeout(value: unknown): number {
  return value === undefined
    ? DEFAULT_WAITER_TIMEOUT_MS
    : checkDuration(value, "waiterTimeoutMs", { min: MIN_WAITER_TIMEOUT_MS });
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
   * Leaves the queue (and the parked waiters) as `owner`'s acquisition `operationId`, releasing a
   * hand-off it was granted meanwhile.
   */
  leave(owner: string, operationId: string): Promise<void>;
}

/**
 * The attempts of one acquisition of a queued kind (plain, fair or write lock): the first failed
 * attempt takes a ticket (unless the call may not wait), and every busy reply either paces the
 * next poll by the turn it announces (src/wait/turn.ts) or, in push mode, is followed by a park:
 * a blocking pop on the acquisition's wake list that returns when a release hands the lock over
 * (queue/hand-off.ts) or when the turn is overdue. Where this client recently had to wait, the
 * park is sent beside the attempt rather than after its reply (RecentContention, client-state.ts): the
 * attempt script wakes it at once unless it registered the waiter. A waiter that gives up leaves
 * the queue.
 */
export function queuedAttempts(
  runtime: LockRuntime,
  keys: LockKeys,
  kind: QueuedKind,
  plan: WaitPlan,
  waiterTimeoutMs: number,
): Pick<AcquisitionSpec, "attempt" | "gaveUp"> {
  const { policy } = plan;
  const parking = policy.mode === "push" ? parkingFor(runtime, keys, plan) : undefined;
  const timeout = !plan.mayWait ? 0 : (parking?.placeMs ?? waiterTimeoutMs);
  // A polling waiter may ask the server to keep its place longer than the waiter timeout while
  // its turn is far off, where the kind allows (TurnPacer); a parked one's place is its park's.
  // Made at the first busy reply that paces a poll (a parked waiter may never need it).
  const keepsFarBack = kind.keepsFarBack && parking === undefined;
  let pacer: TurnPacer | undefined;
  const pace = (): TurnPacer =>
    (pacer ??= new TurnPacer(
      policy,
      Math.floor(waiterTimeoutMs / 3),
      kind.perRelease,
      Math.random,
      keepsFarBack,
    ));
  let roundTripMs = 0;
  // Whether the server may list this waiter: true from the first queueing request until a
  // reply says it holds the lock or left (the acquire script removes it from the queue then).
  let mayBeQueued = false;
  let requests = 0;
  let lastOperationId = "";

  // One request of the acquisition: an attempt, or the wait on its park.
  const attemptOnce: AcquisitionSpec["attempt"] = async (owner, leaseMs, operationId) => {
    requests += 1;
    lastOperationId = operationId;
    if (parking?.registered) {
      return parking.awaitPark(operationId);
    }
    const sentAt = Date.now();
    // The last request the budget allows leaves the queue itself when busy: the wait then
    // ends in exactly `maxPolls` requests.
    const last = plan.mayWait && requests >= policy.maxPolls;
    const parkBeside = parking?.beforeAttempt(operationId, requests === 1, last, sentAt) ?? false;
    if (plan.mayWait) mayBeQueued = true;
    const attempt = kind.attempt(owner, leaseMs, operationId, {
      timeoutMs: last ? -1 : timeout === 0 ? 0 : timeout + (pacer?.keepExtraMs ?? 0),
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
      ...(plan.mayWait ? { nextPollMs: pace().next(outcome.queue, roundTripMs) } : {}),
      ...spent,
    };
  };

  return {
    // However it came (a grant, a replayed hold, an attempt), a hold leaves the queue, and the
    // owner's other parked acquisitions here re-enter.
    attempt: async (owner, leaseMs, operationId) => {
      const outcome = await attemptOnce(owner, leaseMs, operationId);
      if (outcome.kind === "acquired") {
        mayBeQueued = false;
        parking?.held(owner);
      }
      return outcome;
    },
    gaveUp: async (owner) => {
      parking?.leaveSiblings();
      if (!mayBeQueued) return;
      await kind.leave(owner, lastOperationId);
    },
  };
}

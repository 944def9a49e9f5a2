/**
 * How the queued kinds (plain, fair, write lock) wait: each busy reply paces the next poll by its
 * turn (turn.ts) or, in push mode, is followed by a park (parking.ts). The kind supplies its
 * attempt script and its leave.
 */
import { QUEUE_DEFAULTS } from "../defaults.js";
import type { LockKeys } from "../locks/keys.js";
import type { LockRuntime } from "../locks/runtime.js";
import { checkDuration } from "../validate.js";
import type { AcquisitionSpec } from "./acquire.js";
import type { QueuedAttemptOutcome, WaiterTerms, WaitPlan } from "./attempt.js";
import { TurnPacer } from "./turn.js";
import { parkingFor } from "./wake.js";

export const DEFAULT_WAITER_TIMEOUT_MS = QUEUE_DEFAULTS.waiterTimeoutMs;
/** Smallest `waiterTimeoutMs`: a waiter polls every third of it, with room for round trips. */
export const MIN_WAITER_TIMEOUT_MS = QUEUE_DEFAULTS.minWaiterTimeoutMs;

export interface QueueOptions {
  /**
   * How long a waiter keeps its place without polling, in ms (server time). Waiters poll at
   * least every third of it, so only a dead one is dropped, and nobody waits behind it longer.
   * At least 1000.
   * @default 5000
   */
  waiterTimeoutMs?: number;
}

export function checkWaiterTimeout(value: unknown): number {
  return value === undefined
    ? DEFAULT_WAITER_TIMEOUT_MS
    : checkDuration(value, "waiterTimeoutMs", { min: MIN_WAITER_TIMEOUT_MS });
}

export interface QueuedKind {
  attempt(
    owner: string,
    leaseMs: number,
    operationId: string,
    terms: WaiterTerms,
  ): Promise<QueuedAttemptOutcome>;
  /** TurnState.perRelease: 1 where only the head may take it. */
  readonly perRelease: 1 | 2;
  /** TurnPacer's: only where the queue merely paces, so nobody waits behind the dead longer. */
  readonly keepsFarBack: boolean;
  /** Leaves the queue and the parked waiters, releasing a hand-off granted meanwhile. */
  leave(owner: string, operationId: string): Promise<void>;
}

/**
 * The attempts of one acquisition of a queued kind. The first failed attempt takes a ticket
 * (unless the call may not wait); a park may go beside an attempt (RecentContention), which the
 * script wakes at once unless it registered the waiter.
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
  // Only a polling waiter asks to be kept longer (TurnPacer): a parked one's place is its park's.
  // Made lazily: a parked waiter may never need it.
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
  // From the first queueing request until a reply says it holds the lock or left.
  let mayBeQueued = false;
  let requests = 0;
  let lastOperationId = "";

  // An attempt, or the wait on its park.
  const attemptOnce: AcquisitionSpec["attempt"] = async (owner, leaseMs, operationId) => {
    requests += 1;
    lastOperationId = operationId;
    if (parking?.registered) {
      return parking.awaitPark(operationId);
    }
    const sentAt = Date.now();
    // The budget's last leaves the queue itself when busy: exactly `maxPolls` requests.
    const last = plan.mayWait && requests >= policy.maxPolls;
    const parkBeside = parking?.beforeAttempt(operationId, requests === 1, last, sentAt) ?? false;
    if (plan.mayWait) mayBeQueued = true;
    const attempt = kind.attempt(owner, leaseMs, operationId, {
      timeoutMs: last ? -1 : timeout === 0 ? 0 : timeout + (pacer?.keepExtraMs ?? 0),
      roundTripMs,
      claimMs: parking?.claimMs ?? 0,
      parkBeside,
      ...(parking === undefined
        ? {}
        : { wakeBy: parking.wakeBy, registration: parking.registration, shard: parking.shard }),
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
    // However a hold came, it leaves the queue, and the owner's parked siblings re-enter.
    attempt: async (owner, leaseMs, operationId) => {
      const outcome = await attemptOnce(owner, leaseMs, operationId);
      if (outcome.kind === "acquired") {
        mayBeQueued = false;
        parking?.held(owner);
        parking?.finished();
      }
      return outcome;
    },
    gaveUp: async (owner) => {
      parking?.finished();
      if (!mayBeQueued) return;
      await kind.leave(owner, lastOperationId);
    },
  };
}

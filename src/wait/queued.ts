/**
 * How the queued kinds (plain, fair, write lock, semaphore) wait: each busy reply paces the next
 * poll (by its turn, turn.ts, or by the kind's rule) or, in push mode, is followed by a park
 * (parking.ts, listening.ts). The kind supplies its attempt script, its pacing and its leave.
 */
import { QUEUE_DEFAULTS } from "../defaults.js";
import { checkDuration } from "../validate.js";
import type { AcquisitionSpec } from "./acquire.js";
import type { QueuedAttemptOutcome, WaiterTerms, WaitPlan } from "./attempt.js";
import { NOT_YET, type Park, parkingFor, type WaitKeys } from "./push/wake.js";
import type { LockRuntime } from "./runtime.js";
import { TurnPacer, type TurnView } from "./turn.js";

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

/** How a polling waiter paces its attempts. */
export type Pacing<View extends TurnView> =
  | {
      /** By its turn in a lock's queue (TurnPacer). */
      readonly by: "turn";
      /** TurnState.perRelease: 1 where only the head may take it. */
      readonly perRelease: 1 | 2;
      /** TurnPacer's: only where the queue merely paces, so nobody waits behind the dead longer. */
      readonly keepsFarBack: boolean;
    }
  | {
      /** By the kind's own rule (a semaphore's, permits.ts). */
      readonly by: "kind";
      /** Ms to sleep after a busy answer (the kind keeps what it needs of earlier ones). */
      delayMs(view: View): number;
    };

export interface QueuedKind<View extends TurnView = TurnView> {
  attempt(
    owner: string,
    leaseMs: number,
    operationId: string,
    terms: WaiterTerms,
  ): Promise<QueuedAttemptOutcome<View>>;
  readonly pacing: Pacing<View>;
  /**
   * A hold lets its owner's other tasks in (re-entry), so their parks end when one of them takes
   * it; a semaphore's does not.
   */
  readonly reentrant: boolean;
  /**
   * Waiters are served in order (the fair lock): one whose grant's word was lost must ask again
   * within the claim window and replay it, not lose its place to those behind (parkingFor).
   */
  readonly keepsTurn?: boolean;
  /** Leaves the queue and the parked waiters, releasing a hand-off granted meanwhile. */
  leave(owner: string, operationId: string): Promise<void>;
}

/**
 * The attempts of one acquisition of a queued kind. The first failed attempt takes a ticket
 * (unless the call may not wait); a park may go beside an attempt (RecentContention), which the
 * script wakes at once unless it registered the waiter.
 */
export function queuedAttempts<View extends TurnView>(
  runtime: LockRuntime,
  keys: WaitKeys,
  kind: QueuedKind<View>,
  plan: WaitPlan,
  waiterTimeoutMs: number,
): Pick<AcquisitionSpec, "attempt" | "gaveUp"> {
  const { policy } = plan;
  // How the acquisition is woken (parking.ts, listening.ts); undefined: it polls.
  let parking: Park | undefined;
  // The wake channel is chosen once the server has shown which works (parkingFor): until then
  // the waiter polls by its turn.
  let choosing = policy.mode !== "poll";
  const choose = () => {
    const chosen = parkingFor(runtime, keys, plan, kind.keepsTurn);
    if (chosen === NOT_YET) return;
    choosing = false;
    parking = chosen;
    // Its pace no longer asks to be kept longer once it parks (see below).
    if (parking !== undefined) pacer = undefined;
  };
  const placeMs = () => (!plan.mayWait ? 0 : (parking?.placeMs ?? waiterTimeoutMs));
  const { pacing } = kind;
  // Only a polling waiter asks to be kept longer (TurnPacer): a parked one's place is its park's.
  // Made lazily: a parked waiter may never need it.
  let pacer: TurnPacer | undefined;
  if (choosing) choose();
  const nextPollMs = (view: View): number => {
    if (pacing.by === "kind") return pacing.delayMs(view);
    pacer ??= new TurnPacer(
      policy,
      Math.floor(waiterTimeoutMs / 3),
      pacing.perRelease,
      Math.random,
      pacing.keepsFarBack && parking === undefined,
    );
    return pacer.next(view, roundTripMs, Date.now() - (startedAt ?? Date.now()));
  };
  let roundTripMs = 0;
  // The first attempt's send: a blind backoff grows with the time waited since.
  let startedAt: number | undefined;
  // From the first request that may queue or take a hold until a reply says it holds, left or
  // never queued: an attempt whose answer is lost may have done either, so giving up leaves.
  let mayBeQueued = false;
  let requests = 0;
  let lastOperationId = "";

  // An attempt, or the wait on its park.
  const attemptOnce: AcquisitionSpec["attempt"] = async (owner, leaseMs, operationId) => {
    requests += 1;
    lastOperationId = operationId;
    if (choosing) choose();
    // How this attempt waits (a channel chosen after its reply serves the next one).
    const waiting = parking;
    if (waiting?.registered) {
      const parked = await waiting.awaitPark(operationId);
      return parked.kind === "busy" ? { ...parked, why: "park" } : parked;
    }
    const sentAt = Date.now();
    startedAt ??= sentAt;
    // The budget's last leaves the queue itself when busy: exactly `maxPolls` requests.
    const last = plan.mayWait && requests >= policy.maxPolls;
    const parkBeside = waiting?.beforeAttempt(operationId, requests === 1, last, sentAt) ?? false;
    mayBeQueued = true;
    const timeout = placeMs();
    const attempt = kind.attempt(owner, leaseMs, operationId, {
      timeoutMs: last ? -1 : timeout === 0 ? 0 : timeout + (pacer?.keepExtraMs ?? 0),
      roundTripMs,
      claimMs: waiting?.claimMs ?? 0,
      parkBeside,
      ...(waiting === undefined
        ? {}
        : { wakeBy: waiting.wakeBy, registration: waiting.registration, shard: waiting.shard }),
    });
    const granted = await waiting?.grantBeforeAttempt(attempt);
    // A grant heard too late to trust from its word (its window over, or counted from no
    // registration of this acquisition's) leaves the attempt in flight to decide: sent before
    // the grant it registered, sent after it replayed the hold with a lease from its own send
    // (which the next attempt, asked once that lease lapsed, would find gone).
    if (granted?.kind === "acquired") return granted;
    const outcome = await attempt;
    roundTripMs = Date.now() - sentAt;
    // Its reply showed what the server makes of the key-locking flag: the next attempt waits so.
    if (choosing) choose();
    if (outcome.kind !== "busy" || last || timeout === 0) mayBeQueued = false;
    if (waiting !== undefined) {
      const registered =
        waiting.active &&
        !last &&
        outcome.kind === "busy" &&
        !outcome.operationSpent &&
        outcome.queue.position >= 0;
      if (registered) {
        waiting.registeredBy(outcome.queue, sentAt, owner);
        return { kind: "busy", holderTtlMs: outcome.holderTtlMs, nextPollMs: 0, why: "park" };
      }
      waiting.notRegistered(outcome.kind === "acquired" && requests === 1);
    }
    if (outcome.kind === "refused") throw outcome.error;
    if (outcome.kind === "acquired") return outcome;
    const spent = outcome.operationSpent ? { operationSpent: true } : {};
    return {
      kind: "busy",
      holderTtlMs: outcome.holderTtlMs,
      ...(plan.mayWait
        ? {
            nextPollMs: nextPollMs(outcome.queue),
            why: pacing.by === "kind" ? ("permits" as const) : ("turn" as const),
          }
        : {}),
      ...spent,
    };
  };

  return {
    // However a hold came, it leaves the queue, and the owner's parked siblings re-enter.
    attempt: async (owner, leaseMs, operationId) => {
      const outcome = await attemptOnce(owner, leaseMs, operationId);
      if (outcome.kind === "acquired") {
        mayBeQueued = false;
        if (kind.reentrant) parking?.held(owner);
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

/**
 * Polling: the loop of every wait, and the turn-directed pacing of the queued kinds.
 *
 * The loop of every wait. Between attempts it sleeps a busy reply's `nextPollMs`, else
 * `min(backoff, holder's remaining lease, time left)`: never past the lease's end or the
 * deadline, never spinning. The backoff grows with the time already waited (waitedBackoffMs), so
 * a long wait costs requests in the logarithm of its length, not in proportion to it.
 */
import { LockAbortedError, LockBackendError, LockBudgetExceededError } from "../errors.js";
import type { WaitWhy } from "../events.js";
import { sleep } from "../platform.js";
import { isTransientFailure, markTransient } from "../transport/failures.js";
import type { WaitPolicy } from "./policy.js";
import { type Outage, ridesOut } from "./retry.js";

export type PollOutcome<T> =
  | { readonly done: true; readonly value: T }
  | {
      readonly done: false;
      readonly holderTtlMs: number | null;
      /** Replaces the backoff draw. */
      readonly nextPollMs?: number;
      /** Why `nextPollMs` (the trace). */
      readonly why?: WaitWhy;
    };

/** One step of a wait as the loop saw it (the `waitStep` event). */
export interface WaitStep {
  readonly attempt: number;
  readonly answer: "acquired" | "busy" | "failed";
  readonly durationMs: number;
  readonly holderTtlMs: number | null;
  readonly delayMs: number;
  readonly why: WaitWhy | null;
}

export type PollResult<T> =
  | { readonly acquired: true; readonly value: T }
  | { readonly acquired: false; readonly holderTtlMs: number | null };

export interface PollRequest<T> {
  lockName: string;
  waitMs: number;
  signal: AbortSignal | undefined;
  policy: WaitPolicy;
  attempt(): Promise<PollOutcome<T>>;
  random?: () => number;
  /** Told of each step (tracing); absent: nothing is built. */
  onStep?: (step: WaitStep) => void;
}

/**
 * Rejects with LockAbortedError between attempts, LockBudgetExceededError when `maxPolls` is
 * spent. An attempt in flight is never abandoned: if it acquires, the caller gets the lock. A
 * transient failure rides out as a busy answer (ridesOut).
 */
export async function pollForLock<T>(request: PollRequest<T>): Promise<PollResult<T>> {
  const { signal, policy } = request;
  const started = Date.now();
  const deadline = started + request.waitMs;
  throwIfAborted(signal, request.lockName);
  // The first failed poll of the current run of failures.
  let outageSince: number | undefined;
  let failuresInARow = 0;
  const { onStep } = request;
  for (let poll = 1; ; poll++) {
    const sentAt = Date.now();
    let outcome: PollOutcome<T>;
    let failed = false;
    try {
      outcome = await request.attempt();
      outageSince = undefined;
      failuresInARow = 0;
    } catch (error) {
      outageSince ??= sentAt;
      failuresInARow++;
      const outage = { since: outageSince, poll, deadline };
      if (!ridesOut(error, outage, policy)) {
        throw failuresInARow > 1 ? endOfRideOut(error, outage, failuresInARow, policy) : error;
      }
      outcome = { done: false, holderTtlMs: null };
      failed = true;
    }
    const step = (delayMs: number, why: WaitWhy | null) =>
      onStep?.({
        attempt: poll,
        answer: outcome.done ? "acquired" : failed ? "failed" : "busy",
        durationMs: Date.now() - sentAt,
        holderTtlMs: outcome.done ? null : outcome.holderTtlMs,
        delayMs,
        why,
      });
    if (outcome.done) {
      step(0, null);
      return { acquired: true, value: outcome.value };
    }
    const timeLeft = deadline - Date.now();
    if (timeLeft <= 0) {
      step(0, "deadline");
      return { acquired: false, holderTtlMs: outcome.holderTtlMs };
    }
    if (poll >= policy.maxPolls) {
      throw new LockBudgetExceededError(
        request.lockName,
        poll,
        outcome.holderTtlMs,
        Date.now() - started,
      );
    }
    const delay =
      outcome.nextPollMs === undefined
        ? nextPollDelay(
            policy,
            poll,
            outcome.holderTtlMs,
            timeLeft,
            request.random,
            Date.now() - started,
          )
        : Math.max(1, Math.min(outcome.nextPollMs, timeLeft));
    if (onStep !== undefined) {
      step(delay, whyOf(delay, outcome, failed, timeLeft));
    }
    try {
      await sleep(delay, signal);
    } catch {
      throwIfAborted(signal, request.lockName);
    }
  }
}

/** Why the loop sleeps `delay` after `outcome` (see WaitWhy). */
function whyOf(
  delay: number,
  outcome: { readonly holderTtlMs: number | null; readonly why?: WaitWhy },
  failed: boolean,
  timeLeft: number,
): WaitWhy {
  if (failed) return "outage";
  if (delay >= timeLeft) return "deadline";
  if (outcome.why !== undefined) return outcome.why;
  return outcome.holderTtlMs !== null && delay === outcome.holderTtlMs + 1 ? "leaseEnd" : "backoff";
}

function throwIfAborted(signal: AbortSignal | undefined, lockName: string): void {
  if (signal?.aborted) {
    throw new LockAbortedError(`Stopped waiting for lock "${lockName}": the signal was aborted.`, {
      cause: signal.reason,
    });
  }
}

/**
 * A wait that has seen no sign of its turn sleeps at least this share of the time it has waited
 * (jittered over the upper half, so that each poll stretches the wait by an eighth at least): the
 * requests of a wait grow with the logarithm of its length. The price: a release is noticed up
 * to this share of the wait so far late (WAITED_BACKOFF_CAP_MS at most).
 */
export const WAITED_BACKOFF_SHARE = 0.25;
/** The longest backoff drawn from the time waited; a holder's lease end bounds it sooner. */
export const WAITED_BACKOFF_CAP_MS = 30_000;

/** The ceiling of waitedBackoffMs after `waitedMs`. */
export function waitedBackoffCeilingMs(waitedMs: number): number {
  return Math.min(WAITED_BACKOFF_CAP_MS, WAITED_BACKOFF_SHARE * Math.max(0, waitedMs));
}

/**
 * The backoff from the time waited: `draw` (0 to 1) spread over the upper half of
 * waitedBackoffCeilingMs, so that no draw makes a long wait poll fast.
 */
export function waitedBackoffMs(waitedMs: number, draw: number): number {
  return Math.ceil(waitedBackoffCeilingMs(waitedMs) * (0.5 + 0.5 * draw));
}

/**
 * Full jitter ("Exponential Backoff and Jitter", AWS) up to `maxDelayMs`; behind a holder (its
 * lease known), waitedBackoffMs when longer, never past that lease's end. With no holder seen (the
 * lock free but reserved for another waiter, or a request that failed) the time waited says
 * nothing of when the lock frees: a long sleep there would leave it idle. `poll` 1 for the first
 * re-poll, `waitedMs` since the wait began.
 */
export function nextPollDelay(
  policy: Pick<WaitPolicy, "initialDelayMs" | "maxDelayMs">,
  poll: number,
  holderTtlMs: number | null,
  timeLeftMs: number,
  random: () => number = Math.random,
  waitedMs = 0,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(poll - 1, 30));
  const draw = random();
  let delay = Math.max(1, Math.ceil(draw * ceiling));
  if (holderTtlMs !== null) {
    // One ms past the lease end lets the key expire on the server.
    delay = Math.min(Math.max(delay, waitedBackoffMs(waitedMs, draw)), holderTtlMs + 1);
  }
  return Math.max(1, Math.min(delay, timeLeftMs));
}

/**
 * What a wait throws when a transient failure ends it: the failure itself, or, when the wait had
 * ridden out earlier ones, the failure with how long the wait lasted and what ended it, since the
 * failure's own words ("no answer within 2000 ms") tell only of its last request.
 */
function endOfRideOut(
  error: unknown,
  outage: Outage,
  failures: number,
  policy: Pick<WaitPolicy, "maxPolls" | "outageMs">,
  now: number = Date.now(),
): unknown {
  if (!(error instanceof LockBackendError) || error.name !== "LockBackendError") return error;
  if (!isTransientFailure(error)) return error;
  const reason =
    outage.poll >= policy.maxPolls
      ? "wait.maxPolls"
      : now >= outage.deadline
        ? "waitMs"
        : `wait.outageMs (${policy.outageMs} ms)`;
  const ended = new LockBackendError(
    `${error.message}. The wait retried for ${now - outage.since} ms over ${failures} requests, until ${reason}; wait: { outageMs: 0 } fails at once.`,
    { cause: error },
  );
  return markTransient(ended);
}

/*
 * Queue-directed polling, for every kind that queues its waiters (plain, fair, write lock). The
 * first failed attempt queues the waiter; each busy reply gives its place and the lock's hold
 * statistics, from which it sleeps so that its next request reaches Redis just after its turn's
 * release (its own round trip subtracted):
 * - near the head, straight at the turn, a little late: the release reserves the lock for the
 *   head for about a round trip, while an early poll costs a request and a round trip more;
 * - further back, first closer, to where the estimate (less certain with every turn ahead) is
 *   fresh again;
 * - at the head past the expected release, full jitter over a quarter of the overrun;
 * - with nothing learnt or no queue in the reply, the backoff of poll.ts, which grows with the
 *   time waited; past the expected release by a long way, the same from the overrun.
 * Every sleep stays below `refreshMs` (each poll keeps the waiter's place) or what the server was
 * asked to keep beyond it (TurnPacer), and at the head below the holder's lease end. Figures:
 * docs/benchmarks.md, "Queue-directed polling".
 */

/** A waiter's view of its turn, from a busy reply. */
export interface TurnView {
  /** Waiters ahead (0: at the head); -1 when not queued. */
  readonly position: number;
  /** False: free, but reserved for or owed to the head. */
  readonly locked: boolean;
  readonly holderTtlMs: number | null;
  /** Average hold (take → free), server time. */
  readonly holdMs: number | null;
  readonly holdDeviationMs: number | null;
  /** Average ms from one holder taking the lock to the next (who had waited) taking it. */
  readonly cycleMs: number | null;
  readonly heldForMs: number | null;
  /** This one included. */
  readonly waiters?: number | null;
}

export interface TurnState {
  readonly policy: WaitPolicy;
  /** Longest allowed sleep: a third of the waiter timeout. */
  readonly refreshMs: number;
  /** Failed attempts so far (1 after the first). */
  readonly poll: number;
  readonly roundTripMs: number;
  /**
   * 1 for a fair lock (only the head may take it); 2 for the plain lock, whose release reserves
   * it for two head waiters, one aiming a little early and one a little late, so that a release
   * off its expected time still finds a poll right after it.
   */
  readonly perRelease: 1 | 2;
  /**
   * Busy replies in a row showing the lock free for somebody else; from the second, that waiter
   * is dead (until pruned after the waiter timeout) and the poll backs off. Default 0.
   */
  readonly freeInARow?: number;
  /** How much longer the server was asked to keep this place (TurnPacer). Default 0. */
  readonly keptExtraMs?: number;
  /** Since the wait began (the blind backoff grows with it). Default 0. */
  readonly waitedMs?: number;
}

/** A sleep before capping; `blind`: a backoff, no turn in sight (not aimed at a release). */
interface DesiredSleep {
  readonly ms: number;
  readonly blind: boolean;
}

/**
 * A sleep beyond `refreshMs` covers only this share of the rest: a far turn's estimate is less
 * certain, and a waiter that wakes late leaves its release to one poll instead of two.
 */
export const LONG_SLEEP_SHARE = 0.5;

/**
 * Longest extra keep of a waiter's place, in `refreshMs` (no sleep exceeds twice it): a longer
 * sleep bets on a far turn's estimate (docs/benchmarks.md, "A waiter far back").
 */
export const MAX_KEEP_EXTRA_REFRESHES = 1;

/** Releases this close (0: the next one) are aimed at straight; further ones are come closer to. */
export const DIRECT_AIM_RELEASES = 1;

/**
 * How late after the expected release to aim (ms): arriving late costs its lateness, arriving
 * early a request and a round trip.
 */
export function aimLateMs(holdDeviationMs: number, releasesAhead: number): number {
  return 1 + holdDeviationMs * Math.sqrt(releasesAhead + 1);
}

export type AimSide = "only" | "early" | "late";

/**
 * `aimLateMs`, one deviation less for the early side of a pair (the plain lock's head) and one
 * more for the late side, so that a release off its expected time still finds a poll soon after.
 */
export function aimAfterMs(holdDeviationMs: number, releasesAhead: number, side: AimSide): number {
  const shift = side === "early" ? -holdDeviationMs : side === "late" ? holdDeviationMs : 0;
  return aimLateMs(holdDeviationMs, releasesAhead) + shift;
}

/** In whole ms, at least 1. */
export function turnDelay(
  view: TurnView,
  state: TurnState,
  random: () => number = Math.random,
): number {
  return sleepFor(desiredDelay(view, state, random), state);
}

/**
 * An aimed sleep within sleepWithin; a blind one (a backoff) within the place kept, whole: its
 * length is the pacing, not a bet on an estimate.
 */
function sleepFor(desired: DesiredSleep, state: TurnState): number {
  if (!desired.blind) return sleepWithin(desired.ms, state);
  const kept = state.refreshMs + (state.keptExtraMs ?? 0);
  return Math.max(1, Math.min(Math.ceil(desired.ms), kept));
}

/** Beyond `refreshMs` only as far as the server keeps the place, and short (LONG_SLEEP_SHARE). */
function sleepWithin(desired: number, state: TurnState): number {
  const { refreshMs } = state;
  const delay =
    desired <= refreshMs ? desired : refreshMs + LONG_SLEEP_SHARE * (desired - refreshMs);
  return Math.max(1, Math.min(Math.ceil(delay), refreshMs + (state.keptExtraMs ?? 0)));
}

/** Before any cap on the sleep. */
function desiredDelay(view: TurnView, state: TurnState, random: () => number): DesiredSleep {
  const { policy, roundTripMs, perRelease } = state;
  let delay: number;
  let blind = false;
  if (view.position < 0 || view.holdMs === null) {
    blind = true;
    delay = nextPollDelay(
      policy,
      state.poll,
      view.holderTtlMs,
      Number.POSITIVE_INFINITY,
      random,
      state.waitedMs ?? 0,
    );
  } else {
    const hold = view.holdMs;
    const deviation = view.holdDeviationMs ?? hold / 8;
    // An aim lands at most `maxDelayMs` late, what a waiter that knows nothing would be: with
    // holds that vary widely, a later aim leaves a lock freed early idle for all behind.
    const lateAtMost = (ms: number) => Math.min(ms, policy.maxDelayMs);
    const late = lateAtMost(aimLateMs(deviation, 0));
    // Capped: one slow hand-off must not push every aim later (slowing the next ones too).
    const cycle = Math.min(Math.max(hold, view.cycleMs ?? hold + late), hold + 2 * late);
    const overrun = view.locked ? (view.heldForMs ?? 0) - hold : 0;
    // The release aimed at (0: the current holder's); the first `perRelease` aim at the next one.
    const release = Math.max(0, view.position - perRelease + 1) - (view.locked ? 0 : 1);
    // The head aims early only when a second waiter covers the late side.
    const paired = perRelease > 1 && (view.waiters ?? perRelease) > 1;
    const early = paired && view.position === 0;
    if (release === 0 && view.locked && overrun > late) {
      // The holder is late: dense polls just past the expected release, sparser later (with
      // the overrun, so that a hold far longer than usual costs few polls).
      blind = true;
      const ceiling = Math.min(policy.maxDelayMs, Math.max(policy.initialDelayMs, overrun / 4));
      const draw = random();
      delay = Math.max(
        draw * ceiling,
        waitedBackoffMs(Math.min(overrun, state.waitedMs ?? overrun), draw),
      );
    } else if (release < 0) {
      // Free and reserved for this place, yet not taken (the queue moved): ask soon.
      delay = nextPollDelay(policy, 1, null, Number.POSITIVE_INFINITY, random);
    } else {
      // When free, the next holder is taking it now.
      const firstRelease = view.locked ? Math.max(0, -overrun) : hold + late;
      const side: AimSide = !paired ? "only" : early ? "early" : "late";
      const expected = firstRelease + release * cycle;
      const arrival =
        release <= DIRECT_AIM_RELEASES
          ? expected + lateAtMost(aimAfterMs(deviation, release, side))
          : // Come closer first: just after the release before its own, leaving time to aim.
            expected -
            cycle +
            Math.min(
              lateAtMost(aimLateMs(deviation, release - 1)),
              Math.max(0, cycle - roundTripMs - late),
            );
      // The view left the server a reply's way back ago and the request needs the rest of a
      // round trip: aim its arrival. One out of reach polls at once (1 ms floor below): the
      // release may not have come yet.
      delay = arrival - roundTripMs;
    }
    if (release <= 0 && view.holderTtlMs !== null) {
      // One ms past the lease end lets the key expire on the server.
      delay = Math.min(delay, view.holderTtlMs + 1);
    }
  }
  const freeInARow = state.freeInARow ?? 0;
  if (freeInARow >= 2) {
    // Back off: hand-off pace behind a dead head would spend the budget before it is pruned.
    delay = Math.max(
      delay,
      nextPollDelay(policy, freeInARow - 1, null, Number.POSITIVE_INFINITY, random),
    );
  }
  return { ms: delay, blind };
}

/**
 * The pacing of one acquisition. With `keepsFarBack` (the plain lock, whose queue only paces, so
 * a dead waiter far back costs others little) a waiter whose turn is beyond `refreshMs` asks its
 * next attempt to keep its place longer (`keepExtraMs`) and sleeps longer, rather than poll only
 * to keep it. The fair lock keeps the waiter timeout as the bound on waiting behind a dead one.
 */
export class TurnPacer {
  #poll = 0;
  #freeInARow = 0;
  #keepExtraMs = 0;

  constructor(
    private readonly policy: WaitPolicy,
    private readonly refreshMs: number,
    private readonly perRelease: 1 | 2,
    private readonly random: () => number = Math.random,
    private readonly keepsFarBack = false,
  ) {}

  /** Beyond the waiter timeout, for the next attempt. */
  get keepExtraMs(): number {
    return this.#keepExtraMs;
  }

  /**
   * The delay before the next poll after a failed attempt that returned `view`.
   * @param roundTripMs how long that attempt took, request to reply
   */
  next(view: TurnView, roundTripMs: number, waitedMs = 0): number {
    this.#poll += 1;
    this.#freeInARow = view.locked || view.position < 0 ? 0 : this.#freeInARow + 1;
    const state: TurnState = {
      policy: this.policy,
      refreshMs: this.refreshMs,
      poll: this.#poll,
      roundTripMs,
      perRelease: this.perRelease,
      freeInARow: this.#freeInARow,
      keptExtraMs: this.#keepExtraMs,
      waitedMs,
    };
    const desired = desiredDelay(view, state, this.random);
    const sleep = sleepFor(desired, state);
    if (!this.keepsFarBack) {
      this.#keepExtraMs = 0;
    } else if (desired.blind) {
      // The next blind sleep may reach the backoff's ceiling by the next reply: keep the place
      // that long (the plain lock's queue only paces, so a dead waiter costs others little).
      const nextCeiling = waitedBackoffCeilingMs(waitedMs + sleep + 2 * roundTripMs);
      this.#keepExtraMs = Math.max(0, Math.ceil(nextCeiling - this.refreshMs));
    } else {
      // What is left of the wanted delay once the next attempt's reply is in.
      const left = desired.ms - sleep - roundTripMs;
      this.#keepExtraMs =
        left > 0 ? Math.min(MAX_KEEP_EXTRA_REFRESHES * this.refreshMs, Math.ceil(left)) : 0;
    }
    return sleep;
  }
}

/** A duration a script reports as -1 when unknown. */
export function knownOrNull(ms: number | undefined): number | null {
  return ms === undefined || ms < 0 ? null : ms;
}

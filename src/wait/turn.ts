/**
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
import type { WaitPolicy } from "./policy.js";
import { nextPollDelay, waitedBackoffCeilingMs, waitedBackoffMs } from "./poll.js";

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

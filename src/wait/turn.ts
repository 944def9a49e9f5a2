/**
 * Queue-directed polling: the one waiting mechanism of every lock kind that queues its waiters
 * (the plain lock, the fair lock, the write lock). A waiter's first failed attempt gives it a ticket in the
 * lock's queue; every busy reply then says where it stands and how the lock is doing (how long
 * holds last and scatter, the cycle from one holder taking the lock to the next, how long the
 * current holder has held). From that the waiter computes when its turn is expected and sleeps
 * until then, corrected for its own round trip, so that its request reaches Redis just after
 * the release it waits for:
 * - near the head (at most DIRECT_AIM_POSITIONS releases ahead), it aims straight at its turn, a
 *   little late rather than early: the release reserves the lock for the head for about a round
 *   trip, while an early poll costs a request and a whole round trip more;
 * - further back, it first comes closer: it aims at the head's place, half-way through its
 *   predecessor's hold, where the estimate (less certain with every turn ahead) is fresh again;
 * - at the head past the expected release (a long hold), full jitter over a quarter of the overrun;
 * - before anything is learnt, or when the reply carries no queue (a single attempt, a kind
 *   without queue), the full-jitter backoff of policy.ts.
 * So only the next one or two waiters poll near a release. Every sleep stays below `refreshMs`
 * (a third of the waiter timeout: each poll keeps the waiter's place), or, for a plain-lock
 * waiter far back, below what its last attempt asked the server to keep its place beyond the
 * timeout (TurnPacer); and, at the head, below the holder's lease end (docs/benchmarks.md,
 * "Queue-directed polling").
 */
import type { WaitPolicy } from "./policy.js";
import { nextPollDelay } from "./poll.js";

/** A waiter's view of its turn, from a busy reply. */
export interface TurnView {
  /** Waiters ahead of this one (0: at the head); -1 when not queued (no turn to compute). */
  readonly position: number;
  /** Whether some owner holds the lock (false: free, but reserved for or owed to the head). */
  readonly locked: boolean;
  /** The holder's remaining lease in ms; null when free or unknown. */
  readonly holderTtlMs: number | null;
  /** Average ms from taking the lock to freeing it, as the server saw it; null before any. */
  readonly holdMs: number | null;
  /** Mean deviation of the hold in ms; null when unknown. */
  readonly holdDeviationMs: number | null;
  /** Average ms from one holder taking the lock to the next (who had waited) taking it. */
  readonly cycleMs: number | null;
  /** How long the current holder has held, in ms; null when free or unknown. */
  readonly heldForMs: number | null;
  /** Waiters in the queue, this one included; null when unknown. */
  readonly waiters?: number | null;
}

export interface TurnState {
  readonly policy: WaitPolicy;
  /** Longest allowed sleep: a third of the waiter timeout. */
  readonly refreshMs: number;
  /** Failed attempts of this acquisition so far (1 after the first). */
  readonly poll: number;
  /** The round trip of the attempt that brought the view, in ms. */
  readonly roundTripMs: number;
  /**
   * Waiters that aim at each release: 1 for a fair lock (only the head may take it), 2 for the
   * plain lock (a release reserves it for the two head waiters: one aims a little early, one a
   * little late, so that a release off its expected time still finds a poll right after it).
   */
  readonly perRelease: 1 | 2;
  /**
   * Busy replies in a row, up to this one, that showed the lock free for somebody else. From the
   * second, that waiter is not taking it (crashed, until the queue prunes it after the waiter
   * timeout) and the poll backs off. Default 0.
   */
  readonly freeInARow?: number;
  /**
   * How much longer than the waiter timeout the attempt that brought the view asked the server
   * to keep this waiter's place (see TurnPacer): the sleep may be that much longer than
   * `refreshMs`. Default 0.
   */
  readonly keptExtraMs?: number;
}

/**
 * A sleep longer than `refreshMs` stops at this share of its length past `refreshMs` to look
 * again: the further the turn, the less certain its estimate, and a waiter that wakes late
 * leaves the release it was due at to one poll instead of two.
 */
export const LONG_SLEEP_SHARE = 0.5;

/**
 * Longest extra time a waiter asks the server to keep its place for, as a multiple of
 * `refreshMs`: no sleep is longer than twice `refreshMs`. A longer sleep bets on the estimate of
 * a far turn (docs/benchmarks.md, "A waiter far back").
 */
export const MAX_KEEP_EXTRA_REFRESHES = 1;

/** Releases this close (0: the next one) are aimed at straight; further ones are come closer to. */
export const DIRECT_AIM_RELEASES = 1;

/**
 * How late after the expected release a waiter aims, in ms: one mean deviation of the hold (plus
 * one ms), growing with the square root of the releases still ahead. Arriving late costs its
 * lateness; arriving early costs a request and a round trip.
 */
export function aimLateMs(holdDeviationMs: number, releasesAhead: number): number {
  return 1 + holdDeviationMs * Math.sqrt(releasesAhead + 1);
}

/** Which of the waiters aiming at one release this one is. */
export type AimSide = "only" | "early" | "late";

/**
 * How long after an expected release a waiter aims (ms): `aimLateMs`, one deviation less for the
 * early side of a pair (the head of the plain lock's queue), one more for the late side (the
 * second), so that a release off its expected time still finds a poll soon after it.
 */
export function aimAfterMs(holdDeviationMs: number, releasesAhead: number, side: AimSide): number {
  const shift = side === "early" ? -holdDeviationMs : side === "late" ? holdDeviationMs : 0;
  return aimLateMs(holdDeviationMs, releasesAhead) + shift;
}

/** The delay before the next poll, in whole ms (at least 1). */
export function turnDelay(
  view: TurnView,
  state: TurnState,
  random: () => number = Math.random,
): number {
  return sleepWithin(desiredDelay(view, state, random), state);
}

/**
 * The sleep for a wanted delay: up to `refreshMs` as wanted; beyond it, only where the server
 * keeps the waiter's place that long, and then stopping short of the end (LONG_SLEEP_SHARE).
 */
function sleepWithin(desired: number, state: TurnState): number {
  const { refreshMs } = state;
  const delay =
    desired <= refreshMs ? desired : refreshMs + LONG_SLEEP_SHARE * (desired - refreshMs);
  return Math.max(1, Math.min(Math.ceil(delay), refreshMs + (state.keptExtraMs ?? 0)));
}

/** When the next poll should go out, in ms from now, before any cap on how long to sleep. */
function desiredDelay(view: TurnView, state: TurnState, random: () => number): number {
  const { policy, roundTripMs, perRelease } = state;
  let delay: number;
  if (view.position < 0 || view.holdMs === null) {
    delay = nextPollDelay(policy, state.poll, view.holderTtlMs, Number.POSITIVE_INFINITY, random);
  } else {
    const hold = view.holdMs;
    const deviation = view.holdDeviationMs ?? hold / 8;
    const late = aimLateMs(deviation, 0);
    // acquire → next acquire; capped so that one slow hand-off does not push every aim later
    // (which would make the next hand-offs slower still).
    const cycle = Math.min(Math.max(hold, view.cycleMs ?? hold + late), hold + 2 * late);
    const overrun = view.locked ? (view.heldForMs ?? 0) - hold : 0;
    // The release this waiter aims at (0: the current holder's), and its side of it.
    // Each release hands the lock to one waiter; the first `perRelease` all aim at the next one.
    const release = Math.max(0, view.position - perRelease + 1) - (view.locked ? 0 : 1);
    // The head aims early only when a second waiter covers the late side.
    const paired = perRelease > 1 && (view.waiters ?? perRelease) > 1;
    const early = paired && view.position === 0;
    if (release === 0 && view.locked && overrun > late) {
      // The holder is late: dense polls just past the expected release, sparser as it goes on.
      const ceiling = Math.min(policy.maxDelayMs, Math.max(policy.initialDelayMs, overrun / 4));
      delay = random() * ceiling;
    } else if (release < 0) {
      // Free and reserved for this waiter's place, yet not taken (the queue moved): ask soon.
      delay = nextPollDelay(policy, 1, null, Number.POSITIVE_INFINITY, random);
    } else {
      // The holder's release is expected in `firstRelease` ms, then one every `cycle`. When the
      // lock is free, the next holder is taking it now.
      const firstRelease = view.locked ? Math.max(0, -overrun) : hold + late;
      const side: AimSide = !paired ? "only" : early ? "early" : "late";
      const expected = firstRelease + release * cycle;
      const arrival =
        release <= DIRECT_AIM_RELEASES
          ? expected + aimAfterMs(deviation, release, side)
          : // Come closer first: to just after the release before its own, when it is next in
            // line with time left to aim its last poll.
            expected -
            cycle +
            Math.min(aimLateMs(deviation, release - 1), Math.max(0, cycle - roundTripMs - late));
      // The server computed the view about a round trip ago (its reply's way back, or half of
      // it) and the request needs the rest to get there: aim its arrival, not its start. An
      // arrival already out of reach is polled at once (the 1 ms floor below): the release may
      // not have come yet.
      delay = arrival - roundTripMs;
    }
    if (release <= 0 && view.holderTtlMs !== null) {
      // The lease ends at holderTtlMs; one more millisecond lets the key expire on the server.
      delay = Math.min(delay, view.holderTtlMs + 1);
    }
  }
  const freeInARow = state.freeInARow ?? 0;
  if (freeInARow >= 2) {
    // Full jitter under a ceiling that doubles with every such poll: polling at hand-off pace
    // behind a dead head would spend the poll budget before the queue prunes it.
    delay = Math.max(
      delay,
      nextPollDelay(policy, freeInARow - 1, null, Number.POSITIVE_INFINITY, random),
    );
  }
  return delay;
}

/**
 * The pacing of one acquisition: counts its polls, and the busy replies in a row that showed
 * the lock free for somebody else. Where the kind allows (`keepsFarBack`: the plain lock, whose
 * queue only paces, so a dead waiter far back costs the others nothing but a little pacing),
 * a waiter whose turn is further off than `refreshMs` asks the server, in its next attempt, to
 * keep its place longer than the waiter timeout (`keepExtraMs`, at most MAX_KEEP_EXTRA_REFRESHES
 * × `refreshMs`), and then sleeps that much longer than `refreshMs` instead of polling every
 * `refreshMs` only to keep its place. The fair lock keeps the waiter timeout as the bound on
 * waiting behind a dead waiter.
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

  /** How much longer than the waiter timeout the next attempt asks to keep the place (ms). */
  get keepExtraMs(): number {
    return this.#keepExtraMs;
  }

  /**
   * The delay before the next poll after a failed attempt that returned `view`.
   * @param roundTripMs how long that attempt took, request to reply
   */
  next(view: TurnView, roundTripMs: number): number {
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
    };
    const desired = desiredDelay(view, state, this.random);
    const sleep = sleepWithin(desired, state);
    // What will be left of the wanted delay when the next attempt's reply is in.
    const left = desired - sleep - roundTripMs;
    this.#keepExtraMs =
      this.keepsFarBack && left > 0
        ? Math.min(MAX_KEEP_EXTRA_REFRESHES * this.refreshMs, Math.ceil(left))
        : 0;
    return sleep;
  }
}

/** A duration a script reports as -1 when unknown. */
export function knownOrNull(ms: number | undefined): number | null {
  return ms === undefined || ms < 0 ? null : ms;
}

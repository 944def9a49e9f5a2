/**
 * Paced polling for a lock that knows its own rhythm. Blind polling pays for hand-off latency with
 * requests: a waiter learns of a release only at its next poll, so the shorter the gap after a
 * release, the more polls land in the middle of holds. When the server reports how long holds of
 * the lock usually take (and how much they vary), how long the current one has lasted, and how
 * many waiters are polling, each waiter can instead aim at one of the next expected releases,
 * chosen at random so that about `POLLS_PER_RELEASE` waiters ask around each: hand-offs stay
 * quick and the requests per acquisition stop growing with the number of waiters.
 * (Measured in docs/benchmarks.md.)
 */

/** What the acquire script reports about a busy lock (-1: not known yet). */
export interface PaceHint {
  /** Waiters that polled within the last `PACE_WINDOW_MS`, this one included. */
  readonly waiters: number;
  /** Average ms from taking the lock to freeing it, as the server saw it. */
  readonly holdMs: number;
  /** Mean deviation of the hold, in ms. */
  readonly holdDeviationMs: number;
  /** How long the current holder has held, in ms. */
  readonly heldForMs: number;
  /** Average ms from one holder taking the lock to the next (who had been waiting) taking it. */
  readonly cycleMs: number;
  /** The holder's remaining lease; null when unknown. */
  readonly holderTtlMs: number | null;
  /** This waiter's round trip for the attempt that brought the hint, in ms. */
  readonly roundTripMs: number;
}

/** Waiters the pacing brings around each expected release (a Poisson mean: fewer than 1 % get none). */
export const POLLS_PER_RELEASE = 6;
/** A waiter that has not polled for this long is no longer counted (see the acquire script). */
export const PACE_WINDOW_MS = 5_000;
/** Longest paced sleep: well inside the window, so that live waiters keep being counted. */
export const MAX_PACED_DELAY_MS = 2_500;

/**
 * The delay before the next poll, or undefined when the hint says nothing useful (no hold learnt
 * yet, or the holder has overrun its usual hold by more than the usual scatter): then the caller
 * backs off blindly.
 * Never past the holder's lease end (+1 ms), never below 1 ms.
 */
export function pacedPollDelay(
  hint: PaceHint,
  random: () => number = Math.random,
): number | undefined {
  const { holdMs, heldForMs } = hint;
  if (holdMs <= 0 || heldForMs < 0 || heldForMs >= 2 * holdMs) return undefined;
  const holdLeft = holdMs - heldForMs;
  // Releases scatter around the expected one. Arrivals spread over a window from one deviation
  // before it to two after: an early poll costs a request, a late one costs hand-off time, and a
  // release after every arrival costs a whole round trip.
  const deviation = hint.holdDeviationMs >= 0 ? hint.holdDeviationMs : holdMs / 8;
  const before = Math.max(1, deviation);
  const window = before + Math.max(2, 2 * deviation);
  // Past its usual scatter, the release is anyone's guess: back off blindly.
  if (holdLeft < before - window) return undefined;
  const cycle = hint.cycleMs > 0 ? hint.cycleMs : holdMs + window / 2;
  // Window k (k = 0: the current hold's release) opens at `first + k * cycle` ms from now. A
  // poll sent now reaches Redis a round trip from now at the earliest: skip windows closed by then.
  const first = holdLeft - before;
  const earliest = hint.roundTripMs;
  const reachable = first + window > earliest ? 0 : Math.ceil((earliest - first - window) / cycle);
  let slot: number;
  if (reachable === 0 && holdLeft <= window - before) {
    // The hold is about to end (or running a little late) and its window is in reach: stay.
    slot = 0;
  } else {
    // Each waiter picks one of the next `slots` releases; re-drawn after every poll, a waiter
    // asks about every (slots + 1) / 2 releases, so `waiters` of them bring POLLS_PER_RELEASE
    // to each.
    const slots = Math.max(1, Math.ceil((2 * Math.max(1, hint.waiters)) / POLLS_PER_RELEASE) - 1);
    slot = reachable + Math.floor(random() * slots);
  }
  const arrival = first + slot * cycle + random() * window;
  // The request takes a round trip to reach Redis and come back: aim its arrival, not its start.
  let delay = Math.min(arrival - hint.roundTripMs, MAX_PACED_DELAY_MS);
  if (hint.holderTtlMs !== null) delay = Math.min(delay, hint.holderTtlMs + 1);
  return Math.max(1, Math.ceil(delay));
}

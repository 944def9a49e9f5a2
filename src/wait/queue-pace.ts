/**
 * When a queued waiter should ask again. The acquire script tells each waiter its place in the
 * queue, the holder's remaining lease, how long the holder has held, and how long holds and
 * hand-offs of this lock usually take. So instead of polling blindly, a waiter sleeps until the
 * moment worth asking, minus one round trip so that its request lands then:
 * - behind others (position p > 0): half-way through its predecessor's expected hold, so that it
 *   is at the head, with time to spare, when its own turn comes; but when the lock is free and a
 *   waiter ahead has not taken it (it may be dead), the plain backoff;
 * - at the head: the holder's expected release;
 * - at the head past the expected release: full jitter over a quarter of the overrun (at least
 *   `wait.initialDelayMs`, at most `wait.maxDelayMs`): dense polls just after the expected
 *   release, sparser ones as a long hold goes on.
 * Every delay stays below a third of the waiter timeout (each poll refreshes the waiter's place)
 * and, at the head, below the holder's lease end.
 */
import { nextPollDelay, type WaitPolicy } from "./policy.js";

/** A waiter's view of the queue after a failed attempt. */
export interface QueueView {
  /** Waiters ahead of this one (0: at the head); -1 when not queued (a single attempt). */
  readonly position: number;
  /** Whether some owner holds the lock. */
  readonly locked: boolean;
  /** The holder's remaining lease in ms; null when free or unknown. */
  readonly holderTtlMs: number | null;
  /** Average ms from taking the lock to freeing it; null before the first release. */
  readonly holdMs: number | null;
  /** Average ms from a release to the next holder taking it; null before the first hand-off. */
  readonly gapMs: number | null;
  /** How long the current holder has held, in ms; null when unknown. */
  readonly heldForMs: number | null;
}

export interface PaceState {
  readonly policy: WaitPolicy;
  /** Longest allowed sleep: a third of the waiter timeout. */
  readonly refreshMs: number;
  /** Failed attempts of this acquisition so far (1 after the first). */
  readonly poll: number;
  /** This waiter's recent round trip to Redis, in ms. */
  readonly roundTripMs: number;
}

/** The expected rest of the current hold, in ms (0 when free or already overdue). */
function expectedHoldLeft(view: QueueView, holdMs: number): number {
  if (!view.locked) return 0;
  const left = Math.max(0, holdMs - (view.heldForMs ?? 0));
  return view.holderTtlMs === null ? left : Math.min(left, view.holderTtlMs);
}

/** The delay before the next poll, in whole ms (at least 1). */
export function queuePollDelay(
  view: QueueView,
  state: PaceState,
  random: () => number = Math.random,
): number {
  const { policy, roundTripMs } = state;
  let delay: number;
  if (view.holdMs === null) {
    // Nothing learnt yet about this lock: poll like a plain lock's waiter.
    const bound = view.position <= 0 ? view.holderTtlMs : null;
    delay = nextPollDelay(policy, state.poll, bound, Number.POSITIVE_INFINITY, random);
  } else {
    const hold = view.holdMs;
    const gap = view.gapMs ?? roundTripMs;
    const holdLeft = expectedHoldLeft(view, hold);
    if (view.position > 0 && !view.locked) {
      // Free, yet a waiter ahead has not taken it: it may have died, and is pruned only when its
      // waiter timeout passes. Back off as a plain waiter does rather than poll at the pace of
      // hand-offs that are not happening.
      delay = nextPollDelay(policy, state.poll, null, Number.POSITIVE_INFINITY, random);
    } else if (view.position > 0) {
      // The predecessor takes the lock at holdLeft + gap + (p - 1) turns; aim at its mid-hold.
      const predecessorStarts = holdLeft + gap + (view.position - 1) * (hold + gap);
      delay = predecessorStarts + hold / 2 - roundTripMs;
    } else if (holdLeft > 0) {
      delay = holdLeft - roundTripMs;
    } else {
      const overrunMs = Math.max(0, (view.heldForMs ?? hold) - hold);
      const ceiling = Math.min(policy.maxDelayMs, Math.max(policy.initialDelayMs, overrunMs / 4));
      delay = random() * ceiling;
      // The lease ends at holderTtlMs; one more millisecond lets the key expire on the server.
      if (view.holderTtlMs !== null) delay = Math.min(delay, view.holderTtlMs + 1);
    }
  }
  return Math.max(1, Math.min(Math.ceil(delay), state.refreshMs));
}

/** The pacing of one acquisition: counts its polls and smooths its round trips. */
export class QueuePacer {
  #poll = 0;
  #roundTripMs: number | undefined;

  constructor(
    private readonly policy: WaitPolicy,
    private readonly refreshMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /**
   * The delay before the next poll after a failed attempt that returned `view`.
   * @param roundTripMs how long that attempt took, request to reply
   */
  next(view: QueueView, roundTripMs: number): number {
    this.#poll += 1;
    const smoothed =
      this.#roundTripMs === undefined ? roundTripMs : (3 * this.#roundTripMs + roundTripMs) / 4;
    this.#roundTripMs = smoothed;
    return queuePollDelay(
      view,
      {
        policy: this.policy,
        refreshMs: this.refreshMs,
        poll: this.#poll,
        roundTripMs: smoothed,
      },
      this.random,
    );
  }
}

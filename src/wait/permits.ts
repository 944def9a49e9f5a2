/**
 * How a waiter for permits (the semaphore's) paces its polls, from what its busy attempt
 * answered: the semaphore's way of waiting, beside poll.ts's turn pacing for the queued locks.
 */

import type { WaitPolicy } from "./policy.js";
import { nextPollDelay } from "./poll.js";

/** What a busy attempt for permits tells its waiter. */
export interface PermitView {
  /** Permits that must come back before this waiter fits (with those ahead served first). */
  readonly missing: number;
  /** About how many ms apart permits come back (average hold / capacity); null until learnt. */
  readonly permitGapMs: number | null;
  /** Ms until the soonest lease ends (a permit surely returns by then); null: no hold. */
  readonly soonestLeaseEndMs: number | null;
}

/**
 * How long a busy waiter sleeps: the next in line (one permit short; `polls`: its busy answers
 * in a row as next in line) backs off as blind polling does, from the first step when it came to
 * the head (so a wait on long holds does not spend its poll budget in a second, and a waiter that
 * moved up a long queue does not sleep the longest steps at the head); one further back sleeps
 * until about when it will be next in line (the permits it still lacks, less one, times how far
 * apart permits come back: the learnt average hold over the capacity; the backoff, over all its
 * polls, before that is known). Never past
 * the soonest lease end (a permit returns then at the latest), and at least every third of the
 * waiter timeout (to keep its place). `waitedMs`: since it came to be next in line (the backoff
 * grows with it, poll.ts).
 */
export function permitPollDelay(
  outcome: PermitView,
  policy: WaitPolicy,
  waiterTimeoutMs: number,
  polls = 1,
  random: () => number = Math.random,
  waitedMs = 0,
): number {
  const missing = Math.max(1, outcome.missing);
  let delay = nextPollDelay(
    policy,
    Math.max(polls, Math.min(2, missing)),
    outcome.soonestLeaseEndMs,
    Number.POSITIVE_INFINITY,
    random,
    missing <= 1 ? waitedMs : 0,
  );
  if (missing > 1 && outcome.permitGapMs !== null) {
    // Aimed a little early: a waiter that wakes late holds up everyone behind it.
    delay = Math.max(delay, Math.floor(0.8 * (missing - 1) * outcome.permitGapMs));
  }
  if (outcome.soonestLeaseEndMs !== null) delay = Math.min(delay, outcome.soonestLeaseEndMs + 1);
  return Math.max(1, Math.min(delay, Math.floor(waiterTimeoutMs / 3)));
}

/**
 * One waiter's pacing over its busy answers: next in line, its backoff counts from when it became
 * so, not from its first poll: one that moved up a long queue would otherwise sleep the longest steps
 * at the head while permits came back (32 waiters on 4 permits at 20 ms: 34 % of the ideal, not 72 %).
 */
export class PermitPacer {
  readonly #policy: WaitPolicy;
  readonly #waiterTimeoutMs: number;
  readonly #random: () => number;
  #polls = 0;
  #pollsAsNext = 0;
  // When it last came to be next in line.
  #nextSince = 0;

  constructor(policy: WaitPolicy, waiterTimeoutMs: number, random: () => number = Math.random) {
    this.#policy = policy;
    this.#waiterTimeoutMs = waiterTimeoutMs;
    this.#random = random;
  }

  /** Ms to sleep after this busy answer. */
  next(outcome: PermitView, now: number = Date.now()): number {
    this.#polls += 1;
    this.#pollsAsNext = outcome.missing <= 1 ? this.#pollsAsNext + 1 : 0;
    if (this.#pollsAsNext <= 1) this.#nextSince = now;
    // Further back it sleeps by the holds' pace; until that is known, its backoff goes on from
    // all its polls.
    const farBack = outcome.permitGapMs === null ? this.#polls : 1;
    const polls = outcome.missing <= 1 ? this.#pollsAsNext : farBack;
    return permitPollDelay(
      outcome,
      this.#policy,
      this.#waiterTimeoutMs,
      polls,
      this.#random,
      now - this.#nextSince,
    );
  }
}

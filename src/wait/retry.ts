/**
 * When a wait tries again after a failed request: the one place that decides it. The transport
 * below re-sends a single request within its own timeout; a wait decides whether a failure that
 * reached it ends the wait or is ridden out.
 */
import { isTransientFailure } from "../transport/failures.js";
import type { WaitPolicy } from "./policy.js";

/** An unbroken run of failed attempts of one wait. */
export interface Outage {
  /** When the first failed attempt of the run was sent (client clock). */
  readonly since: number;
  /** The attempt that just failed (1 for the first of the wait). */
  readonly poll: number;
  /** When the wait ends (client clock). */
  readonly deadline: number;
}

/**
 * Whether a failed attempt counts as a busy answer and the wait goes on: only a transient failure
 * (network, timeout, 5xx), while time, budget and `policy.outageMs` are left. A refusal (auth, a
 * script error) ends the wait at once.
 */
export function ridesOut(
  error: unknown,
  outage: Outage,
  policy: Pick<WaitPolicy, "maxPolls" | "outageMs">,
  now: number = Date.now(),
): boolean {
  return (
    isTransientFailure(error) &&
    outage.poll < policy.maxPolls &&
    now < outage.deadline &&
    now - outage.since < policy.outageMs
  );
}

/**
 * How long to wait before a failed claim confirmation is tried again: half of what is left of the
 * claim window (the hold's `expiresAt`), or undefined when too little is left to try again.
 */
export function claimRetryInMs(expiresAt: number, now: number = Date.now()): number | undefined {
  const retryIn = Math.floor((expiresAt - now) / 2);
  return retryIn < 10 ? undefined : retryIn;
}

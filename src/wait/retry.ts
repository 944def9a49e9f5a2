/**
 * The one place that decides whether a wait tries again after a failure (the transport re-sends
 * a single request within its own timeout; what reaches the wait ends it or is ridden out).
 */
import { isTransientFailure } from "../transport/failures.js";
import type { WaitPolicy } from "./policy.js";

/** An unbroken run of failed attempts of one wait; times on the client clock. */
export interface Outage {
  /** When the run's first failed attempt was sent. */
  readonly since: number;
  /** The attempt that just failed (1 for the first of the wait). */
  readonly poll: number;
  readonly deadline: number;
}

/**
 * Whether a failure counts as busy: only a transient one (network, timeout, 5xx) while time,
 * budget and `outageMs` are left; a refusal (auth, script error) ends the wait.
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

/** Half of what is left of the claim window; undefined when too little is left. */
export function claimRetryInMs(expiresAt: number, now: number = Date.now()): number | undefined {
  const retryIn = Math.floor((expiresAt - now) / 2);
  return retryIn < 10 ? undefined : retryIn;
}

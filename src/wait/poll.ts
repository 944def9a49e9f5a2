/**
 * The loop of every wait. Between attempts it sleeps a busy reply's `nextPollMs`, else
 * `min(backoff, holder's remaining lease, time left)`: never past the lease's end or the
 * deadline, never spinning. The backoff grows with the time already waited (waitedBackoffMs), so
 * a long wait costs requests in the logarithm of its length, not in proportion to it.
 */
import { LockAbortedError, LockBackendError, LockBudgetExceededError } from "../errors.js";
import type { WaitWhy } from "../events.js";
import { sleep } from "../sleep.js";
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

/** The polling loop shared by every primitive: attempts until done, timed out, aborted or broke. */
import { LockAbortedError, LockBudgetExceededError } from "../errors.js";
import { transientFailure } from "../transport/failures.js";
import { nextPollDelay, type WaitPolicy } from "./policy.js";
import { sleep } from "./sleep.js";

export type PollOutcome<T> =
  | { readonly done: true; readonly value: T }
  | {
      readonly done: false;
      readonly holderTtlMs: number | null;
      /** A server-suggested delay (e.g. from a queue position); replaces the backoff draw. */
      readonly nextPollMs?: number;
    };

export type PollResult<T> =
  | { readonly acquired: true; readonly value: T }
  | { readonly acquired: false; readonly holderTtlMs: number | null };

export interface PollRequest<T> {
  lockName: string;
  /** How long to keep trying after the first attempt; 0 = one attempt; Infinity = no limit. */
  waitMs: number;
  signal: AbortSignal | undefined;
  policy: WaitPolicy;
  attempt(): Promise<PollOutcome<T>>;
  random?: () => number;
}

/**
 * Runs `attempt` until it succeeds or `waitMs` passes. Rejects with LockAbortedError when the
 * signal fires between attempts and LockBudgetExceededError when `policy.maxPolls` is spent.
 * An attempt in flight is never abandoned: if it acquires, the caller gets the lock.
 * An attempt that fails transiently (network, timeout, 5xx) while time and budget are left
 * counts as a busy answer with no known holder ttl, so a brief outage does not end the wait;
 * its error is thrown when the wait or the budget ends on it, and a refusal is thrown at once.
 */
export async function pollForLock<T>(request: PollRequest<T>): Promise<PollResult<T>> {
  const { signal, policy } = request;
  const started = Date.now();
  const deadline = started + request.waitMs;
  throwIfAborted(signal, request.lockName);
  for (let poll = 1; ; poll++) {
    const outcome = await attemptOrRideOut(request.attempt, deadline, poll < policy.maxPolls);
    if (outcome.done) return { acquired: true, value: outcome.value };
    const timeLeft = deadline - Date.now();
    if (timeLeft <= 0) return { acquired: false, holderTtlMs: outcome.holderTtlMs };
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
        ? nextPollDelay(policy, poll, outcome.holderTtlMs, timeLeft, request.random)
        : Math.max(1, Math.min(outcome.nextPollMs, timeLeft));
    try {
      await sleep(delay, signal);
    } catch {
      throwIfAborted(signal, request.lockName);
    }
  }
}

/** The attempt's outcome, or a busy one for a transient failure while another poll may follow. */
async function attemptOrRideOut<T>(
  attempt: () => Promise<PollOutcome<T>>,
  deadline: number,
  budgetLeft: boolean,
): Promise<PollOutcome<T>> {
  try {
    return await attempt();
  } catch (error) {
    if (transientFailure(error) === undefined || !budgetLeft || Date.now() >= deadline) throw error;
    return { done: false, holderTtlMs: null };
  }
}

function throwIfAborted(signal: AbortSignal | undefined, lockName: string): void {
  if (signal?.aborted) {
    throw new LockAbortedError(`Stopped waiting for lock "${lockName}": the signal was aborted.`, {
      cause: signal.reason,
    });
  }
}

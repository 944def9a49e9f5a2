/** The polling loop shared by every primitive: attempts until done, timed out, aborted or broke. */
import { LockAbortedError, LockBudgetExceededError } from "../errors.js";
import { sleep } from "../sleep.js";
import { isTransientFailure } from "../transport/failures.js";
import { nextPollDelay, type WaitPolicy } from "./policy.js";

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
 * An attempt that fails transiently (network, timeout, 5xx) while time, budget and
 * `policy.outageMs` are left counts as a busy answer with no known holder ttl, so a brief
 * outage does not end the wait; otherwise its error is thrown, and a refusal at once.
 */
export async function pollForLock<T>(request: PollRequest<T>): Promise<PollResult<T>> {
  const { signal, policy } = request;
  const started = Date.now();
  const deadline = started + request.waitMs;
  throwIfAborted(signal, request.lockName);
  // When the first failed poll of the current unbroken run of failures was sent.
  let outageSince: number | undefined;
  for (let poll = 1; ; poll++) {
    const sentAt = Date.now();
    let outcome: PollOutcome<T>;
    try {
      outcome = await request.attempt();
      outageSince = undefined;
    } catch (error) {
      outageSince ??= sentAt;
      const now = Date.now();
      const rideOut =
        isTransientFailure(error) &&
        poll < policy.maxPolls &&
        now < deadline &&
        now - outageSince < policy.outageMs;
      if (!rideOut) throw error;
      outcome = { done: false, holderTtlMs: null };
    }
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

function throwIfAborted(signal: AbortSignal | undefined, lockName: string): void {
  if (signal?.aborted) {
    throw new LockAbortedError(`Stopped waiting for lock "${lockName}": the signal was aborted.`, {
      cause: signal.reason,
    });
  }
}

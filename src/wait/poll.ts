/**
 * The loop of every wait: attempts until done, timed out, aborted or broken. Between attempts it
 * sleeps what the way of waiting asks (a busy reply's `nextPollMs`: the turn, or 0 after a park),
 * else blind polling: `min(full-jitter backoff, holder's remaining lease, time left)`, so that it
 * never sleeps past the moment the holder's lease must end or its own deadline, and never spins.
 */
import { LockAbortedError, LockBudgetExceededError } from "../errors.js";
import { sleep } from "../sleep.js";
import type { WaitPolicy } from "./policy.js";
import { ridesOut } from "./retry.js";

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
      if (!ridesOut(error, { since: outageSince, poll, deadline }, policy)) throw error;
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

/**
 * Delay before poll number `poll` (1 for the first re-poll): full jitter ("Exponential Backoff
 * and Jitter", AWS) bounded by the holder's remaining lease and the caller's time left.
 */
export function nextPollDelay(
  policy: Pick<WaitPolicy, "initialDelayMs" | "maxDelayMs">,
  poll: number,
  holderTtlMs: number | null,
  timeLeftMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(poll - 1, 30));
  let delay = Math.max(1, Math.ceil(random() * ceiling));
  // The lease ends at holderTtlMs; one more millisecond lets the key expire on the server.
  if (holderTtlMs !== null) delay = Math.min(delay, holderTtlMs + 1);
  return Math.max(1, Math.min(delay, timeLeftMs));
}

/**
 * The loop of every wait. Between attempts it sleeps a busy reply's `nextPollMs`, else
 * `min(full-jitter backoff, holder's remaining lease, time left)`: never past the lease's end or
 * the deadline, never spinning.
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
      /** Replaces the backoff draw. */
      readonly nextPollMs?: number;
    };

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

/** Full jitter ("Exponential Backoff and Jitter", AWS); `poll` 1 for the first re-poll. */
export function nextPollDelay(
  policy: Pick<WaitPolicy, "initialDelayMs" | "maxDelayMs">,
  poll: number,
  holderTtlMs: number | null,
  timeLeftMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(poll - 1, 30));
  let delay = Math.max(1, Math.ceil(random() * ceiling));
  // One ms past the lease end lets the key expire on the server.
  if (holderTtlMs !== null) delay = Math.min(delay, holderTtlMs + 1);
  return Math.max(1, Math.min(delay, timeLeftMs));
}

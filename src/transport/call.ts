/**
 * Runs a script, re-sending after ambiguous failures with the same arguments: every mutating
 * script replays its first result for a seen operation id, so a re-send never applies twice. The
 * call has a time budget; a request abandoned at it stays exactly-once by the same id.
 */
import { CLIENT_DEFAULTS } from "../defaults.js";
import { LockBackendError } from "../errors.js";
import { sleep } from "../sleep.js";
import { describeFetchFailure, hostOf, probeRestUrl, restUrlOf } from "./diagnose.js";
import { classifyFailure, isAuthRefusal, markTransient, sanitizedFailure } from "./failures.js";
import type { RedisLike } from "./redis-like.js";
import type { Script } from "./script.js";

export interface RetryOptions {
  /** Re-sends after an ambiguous failure, on top of any the Redis client makes itself. */
  retries: number;
  /** Pause before the first re-send; doubled each time. */
  delayMs: number;
  /**
   * The call's time budget in ms, re-sends and the Redis client's own retries included.
   * @default CLIENT_DEFAULTS.backendTimeoutMs
   */
  timeoutMs?: number;
  /**
   * No re-send starts at or after this moment (client clock, epoch ms): a renewal must not
   * re-arm a lease after the renewer's own deadline.
   * @default none
   */
  sendBy?: number;
}

/** Counts what crossed the wire, for tests and benchmarks. */
export interface CallObserver {
  onAttempt?(script: Script): void;
  /** A blocking command was sent (push-mode parking). */
  onBlocking?(command: string): void;
}

export async function callScript(
  redis: RedisLike,
  script: Script,
  keys: string[],
  args: string[],
  retry: RetryOptions,
  observer?: CallObserver,
): Promise<unknown> {
  const budgetMs = retry.timeoutMs ?? CLIENT_DEFAULTS.backendTimeoutMs;
  const deadline = Date.now() + budgetMs;
  const diagnosis = diagnoseWhenSlow(redis, budgetMs, deadline);
  let lastError: unknown;
  let refused = false;
  try {
    for (let attempt = 0; attempt <= retry.retries; attempt++) {
      if (attempt > 0) {
        const pause = retry.delayMs * 2 ** (attempt - 1);
        const resendAt = Date.now() + pause;
        if (resendAt >= deadline || resendAt >= (retry.sendBy ?? Number.POSITIVE_INFINITY)) break;
        await sleep(pause);
      }
      observer?.onAttempt?.(script);
      try {
        return await settleBy(script.run(redis, keys, args, deadline), deadline, budgetMs);
      } catch (error) {
        lastError = error;
        refused = classifyFailure(error) === "refused";
        if (refused || Date.now() >= deadline) break;
      }
    }
  } finally {
    diagnosis.stop();
  }
  throw backendFailure(lastError, script.name, [...args, script.source], {
    redis,
    finding: await diagnosis.finding(isTimeout(lastError)),
  });
}

/**
 * A probe of the REST URL if the call is unanswered at half its budget: `@upstash/redis` re-sends
 * a request whose fetch threw, so a refused connection would otherwise show only as a timeout.
 */
function diagnoseWhenSlow(
  redis: RedisLike,
  budgetMs: number,
  deadline: number,
): { finding(timedOut: boolean): Promise<string | undefined>; stop(): void } {
  let probe: Promise<string | undefined> | undefined;
  // The URL is looked up only when a call is slow: an answered call costs a timer, nothing more.
  const timer = setTimeout(() => {
    const url = restUrlOf(redis);
    if (url === undefined) return;
    probe = probeRestUrl(url, deadline - Date.now()).catch(() => undefined);
  }, budgetMs / 2);
  return {
    stop: () => clearTimeout(timer),
    // Only a call that timed out waits for the probe (which ends by the deadline, now).
    finding: async (timedOut) => (timedOut ? probe : undefined),
  };
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && error.name === "TimeoutError";
}

interface FailureContext {
  readonly redis?: RedisLike;
  readonly finding?: string | undefined;
}

/**
 * The LockBackendError of a failed call `what`, transient unless refused, naming the cause where
 * known. Its cause is a sanitized copy: the client's error echoes the command (`secrets`).
 */
function backendFailure(
  error: unknown,
  what: string,
  secrets: readonly string[],
  context: FailureContext = {},
): Error {
  const cause = sanitizedFailure(error, secrets);
  const url = context.redis === undefined ? undefined : restUrlOf(context.redis);
  const named =
    context.finding ??
    describeFetchFailure(error, url === undefined ? "the server" : hostOf(url)) ??
    (isAuthRefusal(cause.message) ? "REST token refused" : undefined);
  const failure = new LockBackendError(
    `HTTP Redis failed during ${what}: ${named === undefined ? "" : `${named}; `}${cause.message}`,
    { cause },
  );
  return classifyFailure(error) === "refused" ? failure : markTransient(failure);
}

/**
 * Sends one blocking command (`BLPOP key seconds`), held open up to `blockMs`; never re-sent here
 * (the parked waiter asks again through its own loop). Fails after `blockMs` plus the time
 * budget, or at once when `signal` aborts (the server ends the request at its own timeout).
 */
export async function callBlocking(
  redis: RedisLike & Required<Pick<RedisLike, "exec">>,
  command: [string, ...string[]],
  blockMs: number,
  retry: RetryOptions,
  signal?: AbortSignal,
  observer?: CallObserver,
): Promise<unknown> {
  observer?.onBlocking?.(command[0]);
  const budgetMs = blockMs + (retry.timeoutMs ?? CLIENT_DEFAULTS.backendTimeoutMs);
  try {
    return await settleBy(redis.exec(command), Date.now() + budgetMs, budgetMs, signal);
  } catch (error) {
    if (signal?.aborted) throw error;
    throw backendFailure(error, command[0], command, { redis });
  }
}

/**
 * `request`'s outcome, or a rejection (a TimeoutError naming `option`, the setting that sets the
 * budget) at `deadline`; the request then runs on unobserved (its failure handled, so that
 * nothing goes unhandled).
 */
export function settleBy<T>(
  request: Promise<T>,
  deadline: number,
  budgetMs: number,
  signal?: AbortSignal,
  option = "the LockClient option backendTimeoutMs",
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const stop = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", aborted);
    };
    const aborted = () => {
      stop();
      reject(signal?.reason);
    };
    const timer = setTimeout(
      () => {
        stop();
        const error = new Error(`no answer within ${budgetMs} ms (${option})`);
        error.name = "TimeoutError";
        reject(error);
      },
      Math.max(0, deadline - Date.now()),
    );
    if (signal?.aborted) aborted();
    else signal?.addEventListener("abort", aborted, { once: true });
    request.then(
      (value) => {
        stop();
        resolve(value);
      },
      (error: unknown) => {
        stop();
        reject(error);
      },
    );
  });
}

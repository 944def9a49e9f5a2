/**
 * Runs a script and resolves ambiguous failures by asking again with the same arguments. Every
 * mutating script carries an operation id in its arguments and replays its first result when it
 * sees the id again, so a re-send never applies twice. The whole call, re-sends included, has a
 * time budget: a request still unanswered then is abandoned (if it runs later, its operation id
 * keeps it exactly-once), so an unreachable or hanging backend fails fast.
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
   * Default: `CLIENT_DEFAULTS.backendTimeoutMs`.
   */
  timeoutMs?: number;
  /**
   * No re-send starts at or after this moment (client clock, ms since the epoch): a renewal
   * must not re-arm a lease after the renewer's own deadline. Default: none.
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
        return await settleBy(script.run(redis, keys, args), deadline, budgetMs);
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
 * A probe of the REST URL, started if the call is still unanswered at half its budget and done by
 * its deadline: `@upstash/redis` re-sends a request whose fetch threw for ~4 s, so a refused
 * connection would otherwise show only as a timeout. Costs nothing while the backend answers.
 */
function diagnoseWhenSlow(
  redis: RedisLike,
  budgetMs: number,
  deadline: number,
): { finding(timedOut: boolean): Promise<string | undefined>; stop(): void } {
  const url = restUrlOf(redis);
  let probe: Promise<string | undefined> | undefined;
  const timer =
    url === undefined
      ? undefined
      : setTimeout(() => {
          probe = probeRestUrl(url, deadline - Date.now()).catch(() => undefined);
        }, budgetMs / 2);
  return {
    stop: () => {
      if (timer !== undefined) clearTimeout(timer);
    },
    // Only a call that timed out waits for the probe (which ends by the deadline, now).
    finding: async (timedOut) => (timedOut ? probe : undefined),
  };
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && error.name === "TimeoutError";
}

/** Where the failure happened and what a probe found, for the message. */
interface FailureContext {
  readonly redis?: RedisLike;
  readonly finding?: string | undefined;
}

/**
 * The LockBackendError of a failed call `what`: transient unless refused. Its cause is a
 * sanitized copy, since the client's error echoes the command (`secrets`: Lua, owner token).
 * The message names the cause where known: a probe's finding, a refused connection, DNS or TLS
 * error seen directly (with `retry: { retries: 0 }` on the Redis client), a refused token.
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
 * Sends one blocking command (`BLPOP key seconds`) that the server may hold open for up to
 * `blockMs`. It is not re-sent here: the waiter that parks asks again through its own loop.
 * The call fails after `blockMs` plus the client's time budget, or at once when `signal`
 * aborts (the request then runs on unobserved; the server ends it at its own timeout).
 * Failures are LockBackendError with a sanitized cause, transient unless refused.
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

/**
 * Runs a script and resolves ambiguous failures by asking again with the same arguments. Every
 * mutating script carries an operation id in its arguments and replays its first result when it
 * sees the id again, so a re-send never applies twice.
 */
import { LockBackendError } from "../errors.js";
import { sleep } from "../wait/sleep.js";
import { classifyFailure, redisMessageOf } from "./failures.js";
import type { RedisLike } from "./redis-like.js";
import type { Script } from "./script.js";

export interface RetryOptions {
  /** Re-sends after an ambiguous failure, on top of any the Redis client makes itself. */
  retries: number;
  /** Pause before the first re-send; doubled each time. */
  delayMs: number;
}

/** Counts what crossed the wire, for tests and benchmarks. */
export interface CallObserver {
  onAttempt?(script: Script): void;
}

export async function callScript(
  redis: RedisLike,
  script: Script,
  keys: string[],
  args: string[],
  retry: RetryOptions,
  observer?: CallObserver,
): Promise<unknown> {
  let lastError: unknown;
  for (let attempt = 0; attempt <= retry.retries; attempt++) {
    if (attempt > 0) await sleep(retry.delayMs * 2 ** (attempt - 1));
    observer?.onAttempt?.(script);
    try {
      return await script.run(redis, keys, args);
    } catch (error) {
      lastError = error;
      if (classifyFailure(error) === "refused") break;
    }
  }
  throw new LockBackendError(
    `HTTP Redis failed during ${script.name}: ${redisMessageOf(lastError)}`,
    { cause: lastError },
  );
}

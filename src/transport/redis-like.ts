/**
 * How edgelock speaks to HTTP Redis: an `@upstash/redis` `Redis` as it is, or anything that can
 * `EVAL`/`EVALSHA` (e.g. to add tracing or reach another REST-compatible service).
 */
import { LockInputError } from "../errors.js";

export interface RedisLike {
  /** `EVAL script numkeys ...keys ...args`; resolves to the script's reply. */
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  /** `EVALSHA sha1 numkeys ...keys ...args`; rejects with a NOSCRIPT error if not cached. */
  evalsha(sha1: string, keys: string[], args: string[]): Promise<unknown>;
  /**
   * Any one command, e.g. `["BLPOP", key, "1.5"]`; needed only by push-mode waiting
   * (`wait.mode: "push"`). `@upstash/redis` has it (`redis.exec`).
   */
  exec?(command: [string, ...string[]]): Promise<unknown>;
}

/** Push-mode waiting (`wait.mode: "push"`) needs `exec`: checked before any request. */
export function checkCanBlock(redis: RedisLike): void {
  if (!canBlock(redis)) {
    throw new LockInputError(
      'wait.mode "push" needs a Redis client that can send one blocking command: an ' +
        "@upstash/redis client (redis.exec), or a RedisLike with exec(command).",
    );
  }
}

/** Whether `redis` can send the blocking pop of push-mode waiting. */
export function canBlock(redis: RedisLike): redis is RedisLike & Required<Pick<RedisLike, "exec">> {
  return typeof redis.exec === "function";
}

/** Checks that `value` can serve as the `redis` option. */
export function checkRedisLike(value: unknown): RedisLike {
  const candidate = value as Partial<Record<keyof RedisLike, unknown>> | null | undefined;
  if (
    candidate === null ||
    (typeof candidate !== "object" && typeof candidate !== "function") ||
    typeof candidate.eval !== "function" ||
    typeof candidate.evalsha !== "function"
  ) {
    throw new LockInputError(
      "The redis option must be an @upstash/redis client (new Redis({ url, token })) or an object " +
        "with eval(script, keys, args) and evalsha(sha1, keys, args) methods.",
    );
  }
  return candidate as RedisLike;
}

/**
 * The port through which edgelock speaks to HTTP Redis. An `@upstash/redis` `Redis` satisfies it
 * as it is; anything else that can run Lua (`EVAL`/`EVALSHA` with keys and string arguments) can
 * implement it, e.g. to add tracing or to reach another REST-compatible service.
 */
import { LockInputError } from "../errors.js";

export interface RedisLike {
  /** `EVAL script numkeys ...keys ...args`; resolves to the script's reply. */
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  /** `EVALSHA sha1 numkeys ...keys ...args`; rejects with a NOSCRIPT error if not cached. */
  evalsha(sha1: string, keys: string[], args: string[]): Promise<unknown>;
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

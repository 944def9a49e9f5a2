/** Helpers of the fair-lock and read-write-lock suites. */
import type { RedisLike } from "../../../src/index.js";

/**
 * A Redis client that dies after `calls` script calls: every later call rejects, as if the
 * isolate holding it had crashed. Nothing it queued is cleaned up.
 */
export function crashingAfter(redis: RedisLike, calls: number): RedisLike {
  let left = calls;
  const guard = () => {
    if (left <= 0) return Promise.reject(new Error("this isolate has crashed"));
    left -= 1;
    return undefined;
  };
  return {
    eval: (script, keys, args) => guard() ?? redis.eval(script, keys, args),
    evalsha: (sha, keys, args) => guard() ?? redis.evalsha(sha, keys, args),
  };
}

/**
 * A Redis client whose calls after the first `calls` wait until `open()`: the isolate holding it
 * is paused (not dead) for as long as the test needs.
 */
export function pausedAfter(redis: RedisLike, calls: number): { redis: RedisLike; open(): void } {
  let left = calls;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  const gate = async () => {
    if (left > 0) left -= 1;
    else await opened;
  };
  return {
    redis: {
      eval: async (script, keys, args) => {
        await gate();
        return redis.eval(script, keys, args);
      },
      evalsha: async (sha, keys, args) => {
        await gate();
        return redis.evalsha(sha, keys, args);
      },
    },
    open,
  };
}

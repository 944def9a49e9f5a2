import type { RedisLike } from "../../src/transport/redis-like.js";

/** A Redis client that records each script call, so that a test can deliver one again late. */
export function recordingRedis(redis: RedisLike) {
  const calls: (() => Promise<unknown>)[] = [];
  const client: RedisLike = {
    eval: (script, keys, args) => {
      calls.push(() => redis.eval(script, keys, args));
      return redis.eval(script, keys, args);
    },
    evalsha: (sha, keys, args) => {
      calls.push(() => redis.evalsha(sha, keys, args));
      return redis.evalsha(sha, keys, args);
    },
  };
  return { client, calls };
}

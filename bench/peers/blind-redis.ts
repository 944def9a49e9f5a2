/**
 * "edgelock blind": hides the hints of the acquire script's busy replies (place in the queue,
 * hold statistics) from the client, so that it polls with the full-jitter backoff alone, as
 * before pacing. The server still queues its waiters (and reserves releases for the head ones).
 * Pure (no Node API): the bench's Worker uses it too.
 */
import type { RedisLike } from "../../src/transport/redis-like.js";

/**
 * Passes every call through, but blanks the hints of busy replies ({0, pttl, ...hints} →
 * {0, pttl, -1, ...}: "unknown"): the server still keeps its statistics, the client just cannot
 * see them.
 */
export function blindRedis(redis: RedisLike): RedisLike {
  const cut = (reply: unknown) =>
    Array.isArray(reply) && reply.length > 2 && Number(reply[0]) === 0
      ? reply.map((item, index) => (index < 2 ? item : -1))
      : reply;
  return {
    eval: async (script, keys, args) => cut(await redis.eval(script, keys, args)),
    evalsha: async (sha, keys, args) => cut(await redis.evalsha(sha, keys, args)),
  };
}

/** edgelock's reentrant lock over @upstash/redis (REST), in lease mode. */
import { Redis } from "@upstash/redis";
import { LockClient, type LockHandle } from "../../src/index.js";
import type { RedisLike } from "../../src/transport/redis-like.js";
import { DEFAULT_WAIT_POLICY, type WaitOptions } from "../../src/wait/policy.js";
import type { Contender, Peer, PeerEnv } from "./peer.js";

/**
 * `wait` overrides the polling policy (for tuning runs); the default peer runs the library's
 * defaults. `blind` hides the pace hints of busy replies from the client (see blindRedis), so
 * that it polls with the full-jitter backoff alone, as before pacing: an A/B in the same run.
 */
export function edgelockPeer(env: PeerEnv, wait?: WaitOptions, blind = false): Peer {
  const policy = { ...DEFAULT_WAIT_POLICY, ...wait };
  const tag =
    (wait === undefined
      ? ""
      : `[${policy.initialDelayMs}/${policy.maxDelayMs}/${policy.maxPolls}]`) +
    (blind ? " blind" : "");
  return {
    id: `edgelock${tag.replace(" ", "-")}`,
    label: `edgelock${tag}`,
    transport: "REST",
    config:
      `lease ${env.leaseMs} ms, wait { initialDelayMs: ${policy.initialDelayMs}, ` +
      `maxDelayMs: ${policy.maxDelayMs}, maxPolls: ${policy.maxPolls} }` +
      (wait === undefined ? " (defaults)" : "") +
      (blind ? ", pace hints hidden: full-jitter backoff only" : ", paced by the hold statistics"),
    contender: async () => {
      const redis = new Redis({ url: env.restUrl, token: env.token });
      const client = new LockClient({
        redis: blind ? blindRedis(redis) : redis,
        prefix: "bench",
        ...(wait === undefined ? {} : { wait }),
      });
      const held = new Map<string, LockHandle>();
      return {
        acquire: async (key) => {
          const handle = await client.lock(key).acquire({ leaseMs: env.leaseMs });
          held.set(key, handle);
          return true;
        },
        release: async (key) => {
          const handle = held.get(key);
          held.delete(key);
          await handle?.release();
        },
        close: async () => {},
      } satisfies Contender;
    },
  };
}

/**
 * Passes every call through, but blanks the hints of the acquire script's busy replies
 * ({0, pttl, ...hints} → {0, pttl, -1, ...}: "unknown"): the server still keeps its statistics,
 * the client just cannot see them.
 */
function blindRedis(redis: Redis): RedisLike {
  const cut = (reply: unknown) =>
    Array.isArray(reply) && reply.length > 2 && Number(reply[0]) === 0
      ? reply.map((item, index) => (index < 2 ? item : -1))
      : reply;
  return {
    eval: async (script, keys, args) => cut(await redis.eval(script, keys, args)),
    evalsha: async (sha, keys, args) => cut(await redis.evalsha(sha, keys, args)),
  };
}

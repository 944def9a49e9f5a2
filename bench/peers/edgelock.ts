/** edgelock's reentrant lock over @upstash/redis (REST), in lease mode. */
import { Redis } from "@upstash/redis";
import { LockClient, type LockHandle } from "../../src/index.js";
import { DEFAULT_WAIT_POLICY, type WaitOptions } from "../../src/wait/policy.js";
import { blindRedis } from "./blind-redis.js";
import type { Contender, Peer, PeerEnv } from "./peer.js";

/**
 * `wait` overrides the polling policy (for tuning runs); the default peer runs the library's
 * defaults. `blind` hides the pace hints of busy replies from the client (see blind-redis.ts), so
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
      (blind ? ", busy-reply hints hidden: full-jitter backoff only" : ", queue-directed polling"),
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

/** edgelock's fair lock (first come, first served among waiters), REST, lease mode. */
import { Redis } from "@upstash/redis";
import { LockClient, type LockHandle } from "../../src/index.js";
import type { Contender, Peer, PeerEnv } from "./peer.js";

export function edgelockFairPeer(env: PeerEnv): Peer {
  return {
    id: "edgelock-fair",
    label: "edgelock fairLock",
    transport: "REST",
    config: `client.fairLock(name), lease ${env.leaseMs} ms, defaults`,
    contender: async () => {
      const client = new LockClient({
        redis: new Redis({ url: env.restUrl, token: env.token }),
        prefix: "bench",
      });
      const held = new Map<string, LockHandle>();
      return {
        acquire: async (key) => {
          held.set(key, await client.fairLock(key).acquire({ leaseMs: env.leaseMs }));
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

/** edgelock's read-write lock: shared read holds, exclusive write holds; REST, lease mode. */
import { Redis } from "@upstash/redis";
import { LockClient, type LockHandle } from "../../src/index.js";
import type { Contender, Peer, PeerEnv } from "./peer.js";

export function edgelockReadWritePeer(env: PeerEnv): Peer {
  return {
    id: "edgelock-rw",
    label: "edgelock readWriteLock",
    transport: "REST",
    config: `client.readWriteLock(name).readLock()/.writeLock(), lease ${env.leaseMs} ms, defaults`,
    sharedReads: true,
    contender: async () => {
      const client = new LockClient({
        redis: new Redis({ url: env.restUrl, token: env.token }),
        prefix: "bench",
      });
      const held = new Map<string, LockHandle>();
      return {
        acquire: async (key, mode = "write") => {
          const rw = client.readWriteLock(key);
          const lock = mode === "read" ? rw.readLock() : rw.writeLock();
          held.set(key, await lock.acquire({ leaseMs: env.leaseMs }));
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

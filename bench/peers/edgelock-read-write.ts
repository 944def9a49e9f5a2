/** edgelock's read-write lock: shared read holds, exclusive write holds; REST, lease mode. */
import { Redis } from "@upstash/redis";
import { LockClient } from "../../src/index.js";
import { handleContender } from "./edgelock.js";
import type { Peer, PeerEnv } from "./peer.js";

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
      return handleContender((key, mode) => {
        const rw = client.readWriteLock(key);
        return (mode === "read" ? rw.readLock() : rw.writeLock()).acquire({ leaseMs: env.leaseMs });
      });
    },
  };
}

/** edgelock's fair lock (first come, first served among waiters), REST, lease mode. */
import { Redis } from "@upstash/redis";
import { LockClient, type LockHandle } from "../../src/index.js";
import type { WaitOptions } from "../../src/wait/policy.js";
import { describeWait } from "./edgelock.js";
import type { Contender, Peer, PeerEnv } from "./peer.js";

/** `wait: PUSH_WAIT` (edgelock.ts) makes it `edgelock fair push`. */
export function edgelockFairPeer(env: PeerEnv, wait?: WaitOptions): Peer {
  const push = wait?.mode === "push";
  return {
    id: push ? "edgelock-fair-push" : "edgelock-fair",
    label: push ? "edgelock fair push" : "edgelock fairLock",
    transport: "REST",
    config: `client.fairLock(name), lease ${env.leaseMs} ms, ${describeWait(wait)}`,
    contender: async () => {
      const client = new LockClient({
        redis: new Redis({ url: env.restUrl, token: env.token }),
        prefix: "bench",
        ...(wait === undefined ? {} : { wait }),
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

/** edgelock's fair lock (first come, first served among waiters), REST, lease mode. */
import { Redis } from "@upstash/redis";
import { LockClient } from "../../src/index.js";
import type { WaitOptions } from "../../src/wait/policy.js";
import { describeWait, handleContender } from "./edgelock.js";
import type { Peer, PeerEnv } from "./peer.js";

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
      return handleContender((key) => client.fairLock(key).acquire({ leaseMs: env.leaseMs }));
    },
  };
}

/** edgelock's fair lock (first come, first served among waiters), REST, lease mode. */
import { Redis } from "@upstash/redis";
import { LockClient } from "../../src/index.js";
import type { WaitOptions } from "../../src/wait/policy.js";
import { describeWait, edgelockLabel, handleContender } from "./edgelock.js";
import type { Peer, PeerEnv } from "./peer.js";

/**
 * No `wait`: the fair lock at the library's defaults; `POLL_WAIT` / `PUSH_WAIT` (edgelock.ts)
 * make it `edgelock fairLock poll` / `edgelock fairLock push`.
 */
export function edgelockFairPeer(env: PeerEnv, wait?: WaitOptions): Peer {
  const mode = wait?.mode;
  return {
    id: mode === undefined ? "edgelock-fair" : `edgelock-fair-${mode}`,
    label: edgelockLabel("edgelock fairLock", wait),
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

/**
 * Redlock (`@sesamecare-oss/redlock`, the maintained fork of redlock v5) on one Redis through
 * ioredis: a TCP transport, not REST. Its retry count is unlimited here (default 10); delay and
 * jitter are its defaults (200 ± 100 ms).
 */
import { Redlock, type Lock as RedlockLock } from "@sesamecare-oss/redlock";
import type { Contender, Peer, PeerEnv } from "./peer.js";
import { connectTcp } from "./tcp.js";

export function redlockPeer(env: PeerEnv): Peer {
  return {
    id: "redlock",
    label: "redlock (TCP)",
    transport: "TCP",
    config: `lease ${env.leaseMs} ms, { retryCount: -1 (unlimited), retryDelay: 200, retryJitter: 100 } (defaults but the count), one Redis via ioredis`,
    contender: async () => {
      const connection = await connectTcp(env);
      const redlock = new Redlock([connection], { retryCount: -1 });
      const held = new Map<string, RedlockLock>();
      return {
        acquire: async (key) => {
          held.set(key, await redlock.acquire([`redlock:${key}`], env.leaseMs));
          return true;
        },
        release: async (key) => {
          const lock = held.get(key);
          held.delete(key);
          await lock?.release();
        },
        close: async () => {
          connection.disconnect();
        },
      } satisfies Contender;
    },
  };
}

/**
 * redis-semaphore's Mutex through ioredis: a TCP transport, not REST. SET NX PX polled every
 * `retryInterval` (its default, 10 ms); acquire timeout raised from 10 s so that it keeps trying;
 * auto-refresh off (leases are long enough for the bench).
 */

import { Mutex } from "redis-semaphore";
import type { Contender, Peer, PeerEnv } from "./peer.js";
import { connectTcp } from "./tcp.js";

const ACQUIRE_TIMEOUT_MS = 600_000;

export function redisSemaphorePeer(env: PeerEnv): Peer {
  return {
    id: "redis-semaphore",
    label: "redis-semaphore (TCP)",
    transport: "TCP",
    config: `Mutex { lockTimeout: ${env.leaseMs}, acquireTimeout: ${ACQUIRE_TIMEOUT_MS}, retryInterval: 10 (default), refreshInterval: 0 }`,
    contender: async () => {
      const connection = await connectTcp(env);
      const held = new Map<string, Mutex>();
      return {
        acquire: async (key) => {
          const mutex = new Mutex(connection, `redis-semaphore:${key}`, {
            lockTimeout: env.leaseMs,
            acquireTimeout: ACQUIRE_TIMEOUT_MS,
            refreshInterval: 0,
          });
          if (!(await mutex.tryAcquire())) return false;
          held.set(key, mutex);
          return true;
        },
        release: async (key) => {
          const mutex = held.get(key);
          held.delete(key);
          await mutex?.release();
        },
        close: async () => {
          connection.disconnect();
        },
      } satisfies Contender;
    },
  };
}

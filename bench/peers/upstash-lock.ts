/**
 * @upstash/lock over @upstash/redis (REST): SET NX PX to acquire, an EVAL to release, fixed-delay
 * retries. Its default gives up after 3 attempts; here it keeps trying (many attempts at its own
 * default delay), so that it finishes the same work, and any give-up is counted as a failure.
 */
import { Lock } from "@upstash/lock";
import { Redis } from "@upstash/redis";
import type { Contender, Peer, PeerEnv } from "./peer.js";

/** @upstash/lock's own default retry delay, in ms. */
export const UPSTASH_LOCK_DEFAULT_DELAY_MS = 100;
const ATTEMPTS = 1_000_000;

type LockRedis = ConstructorParameters<typeof Lock>[0]["redis"];

export function upstashLockPeer(env: PeerEnv, delayMs = UPSTASH_LOCK_DEFAULT_DELAY_MS): Peer {
  const tag = delayMs === UPSTASH_LOCK_DEFAULT_DELAY_MS ? "" : `[delay ${delayMs}]`;
  return {
    id: `upstash-lock${tag}`,
    label: `@upstash/lock${tag}`,
    transport: "REST",
    config: `lease ${env.leaseMs} ms, retry { attempts: ${ATTEMPTS}, delay: ${delayMs} }`,
    contender: async () => {
      // @upstash/lock's typings name the CommonJS build of @upstash/redis: same class, other file.
      const redis = new Redis({ url: env.restUrl, token: env.token }) as unknown as LockRedis;
      const held = new Map<string, Lock>();
      return {
        acquire: async (key) => {
          const lock = new Lock({
            id: `upstash-lock:${key}`,
            redis,
            lease: env.leaseMs,
            retry: { attempts: ATTEMPTS, delay: delayMs },
          });
          if (!(await lock.acquire())) return false;
          held.set(key, lock);
          return true;
        },
        release: async (key) => {
          const lock = held.get(key);
          held.delete(key);
          await lock?.release();
        },
        close: async () => {},
      } satisfies Contender;
    },
  };
}

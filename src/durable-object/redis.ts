/**
 * The Redis a LockWatchdog renews leases on: by default the Upstash REST URL and token of the
 * Worker that hosts it — the same Redis the holders' LockClient speaks to.
 */
import { Redis } from "@upstash/redis/cloudflare";
import type { RedisLike } from "../transport/redis-like.js";

/** Bindings the default connection reads (set them as secrets: `wrangler secret put …`). */
export interface WatchdogEnv {
  UPSTASH_REDIS_REST_URL?: string;
  UPSTASH_REDIS_REST_TOKEN?: string;
}

/**
 * The client's own re-sends, off. By default `@upstash/redis` re-sends a request whose fetch
 * threw up to 5 times over ~4 s, unobserved by edgelock's transport, which re-sends only before
 * the renewal deadline (`sendBy`); a client re-send after it would hold a crashed holder's lock
 * past the documented bound. `{ retries: 0 }`, not `false`: in @upstash/redis 1.x `retry: false`
 * still allows one re-send (it sets one retry attempt).
 */
export const WATCHDOG_REDIS_RETRY = { retries: 0 } as const;

/** A RedisLike on the env's Upstash REST URL and token, or undefined when either is missing. */
export function redisFromEnv(env: WatchdogEnv): RedisLike | undefined {
  const url = env.UPSTASH_REDIS_REST_URL;
  const token = env.UPSTASH_REDIS_REST_TOKEN;
  if (!url || !token) return undefined;
  return new Redis({ url, token, retry: WATCHDOG_REDIS_RETRY });
}

/** The Redis a LockWatchdog renews on: by default its Worker's Upstash REST URL and token. */
import { Redis } from "@upstash/redis/cloudflare";
import type { RedisLike } from "../transport/redis-like.js";

/** Bindings the default connection reads (set them as secrets: `wrangler secret put …`). */
export interface WatchdogEnv {
  UPSTASH_REDIS_REST_URL?: string;
  UPSTASH_REDIS_REST_TOKEN?: string;
}

/**
 * The client's own re-sends, off: unseen by the transport, they could land after the renewal
 * deadline (`sendBy`). Not `retry: false`, which still allows one (docs/lease-vs-watchdog.md).
 */
export const WATCHDOG_REDIS_RETRY = { retries: 0 } as const;

/** A RedisLike on the env's Upstash REST URL and token, or undefined when either is missing. */
export function redisFromEnv(env: WatchdogEnv): RedisLike | undefined {
  const url = env.UPSTASH_REDIS_REST_URL;
  const token = env.UPSTASH_REDIS_REST_TOKEN;
  if (!url || !token) return undefined;
  return new Redis({ url, token, retry: WATCHDOG_REDIS_RETRY });
}

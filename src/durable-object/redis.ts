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

/** A RedisLike on the env's Upstash REST URL and token, or undefined when either is missing. */
export function redisFromEnv(env: WatchdogEnv): RedisLike | undefined {
  const url = env.UPSTASH_REDIS_REST_URL;
  const token = env.UPSTASH_REDIS_REST_TOKEN;
  if (!url || !token) return undefined;
  return new Redis({ url, token });
}

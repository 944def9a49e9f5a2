declare namespace Cloudflare {
  interface Env {
    /** JSON list of { kind, url, token }: the local REST servers started by test/global-setup.ts. */
    EDGELOCK_TEST_SERVERS: string;
    /** The LockWatchdog Durable Object (wrangler.toml); it renews on the servers[0] below. */
    LOCK_WATCHDOG: DurableObjectNamespace;
    /** servers[0]'s URL and token: the Redis the LockWatchdog renews on (vitest.config.ts). */
    UPSTASH_REDIS_REST_URL: string;
    UPSTASH_REDIS_REST_TOKEN: string;
  }
}

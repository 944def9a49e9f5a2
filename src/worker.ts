/**
 * The edgelock host Worker (top-level wrangler.toml): a small HTTP API over the lock client, for
 * trying edgelock by hand under `wrangler dev` and for services that cannot embed the library.
 *
 *   GET  /locks/:name                     → { locked, ttlMs }
 *   POST /locks/:name/acquire?leaseMs&waitMs → 200 { owner, fencingToken, leaseMs } | 409
 *   POST /locks/:name/release?owner=…     → 204 | 409 (not held by that owner)
 *
 * Bindings: UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN (secrets), EDGELOCK_PREFIX.
 */
import { Redis } from "@upstash/redis/cloudflare";
import { EdgelockError, LockClient, LockInputError, LockNotHeldError } from "./index.js";

export interface HostEnv {
  UPSTASH_REDIS_REST_URL?: string;
  UPSTASH_REDIS_REST_TOKEN?: string;
  EDGELOCK_PREFIX?: string;
}

const ROUTE = /^\/locks\/([^/]+)(?:\/(acquire|release))?$/;

function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

function optionalInt(url: URL, name: string): number | undefined {
  const raw = url.searchParams.get(name);
  return raw === null ? undefined : Number(raw);
}

export async function handleLockApi(request: Request, client: LockClient): Promise<Response> {
  const url = new URL(request.url);
  const match = ROUTE.exec(url.pathname);
  if (!match) return json({ error: "not found" }, 404);
  const lock = client.lock(decodeURIComponent(match[1]!));
  const action = match[2];
  try {
    if (!action && request.method === "GET") {
      const ttlMs = await lock.remainingTtl();
      return json({ locked: ttlMs !== null, ttlMs });
    }
    if (action === "acquire" && request.method === "POST") {
      const held = await lock.tryAcquire({
        leaseMs: optionalInt(url, "leaseMs") ?? 30_000,
        waitMs: optionalInt(url, "waitMs") ?? 0,
      });
      if (!held) {
        const ttl = await lock.remainingTtl();
        const retryAfter = String(Math.max(1, Math.ceil((ttl ?? 1000) / 1000)));
        return json({ error: "locked" }, 409, { "retry-after": retryAfter });
      }
      return json({ owner: held.owner, fencingToken: held.fencingToken, leaseMs: held.leaseMs });
    }
    if (action === "release" && request.method === "POST") {
      await lock.release({ owner: url.searchParams.get("owner") ?? "" });
      return new Response(null, { status: 204 });
    }
    return json({ error: "method not allowed" }, 405);
  } catch (error) {
    if (error instanceof LockNotHeldError) return json({ error: error.message }, 409);
    if (error instanceof LockInputError) return json({ error: error.message }, 400);
    if (error instanceof EdgelockError) return json({ error: error.message }, 502);
    throw error;
  }
}

// One client per isolate: requests share its script cache (EVALSHA after the first EVAL).
let cached: { url: string; client: LockClient } | undefined;

function clientFor(
  env: HostEnv & { UPSTASH_REDIS_REST_URL: string; UPSTASH_REDIS_REST_TOKEN: string },
) {
  if (cached?.url !== env.UPSTASH_REDIS_REST_URL) {
    const redis = new Redis({
      url: env.UPSTASH_REDIS_REST_URL,
      token: env.UPSTASH_REDIS_REST_TOKEN,
    });
    const client = new LockClient({ redis, prefix: env.EDGELOCK_PREFIX ?? "edgelock" });
    cached = { url: env.UPSTASH_REDIS_REST_URL, client };
  }
  return cached.client;
}

export default {
  async fetch(request: Request, env: HostEnv): Promise<Response> {
    const { UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token } = env;
    if (!url || !token) {
      return json(
        { error: "Set UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN (see README)." },
        500,
      );
    }
    return handleLockApi(
      request,
      clientFor({ ...env, UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token }),
    );
  },
};

/**
 * The edgelock host Worker (top-level wrangler.toml): a small HTTP API over the lock client, for
 * trying edgelock by hand under `wrangler dev` and for services that cannot embed the library.
 * It also hosts the `LockWatchdog` Durable Object, which other Workers can bind with
 * `script_name = "edgelock"`.
 *
 *   GET  /locks/:name                     → { locked, ttlMs }
 *   POST /locks/:name/acquire?leaseMs&waitMs → 200 { owner, fencingToken, leaseMs } | 409
 *   POST /locks/:name/acquire?watchdog=durable-object&waitMs → the same, in watchdog mode: the
 *        lock outlives the request, renewed by the LockWatchdog until released (or maxHoldMs)
 *   POST /locks/:name/release?owner=…     → 204 | 409 (not held by that owner)
 *   POST /locks/:name/heartbeat?owner=…   → the watchdog's status of that hold
 *   GET  /locks/:name/watchdog?owner=…    → the same, without counting as a heartbeat
 *
 * Bindings: UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN (secrets), EDGELOCK_PREFIX,
 * LOCK_WATCHDOG (the Durable Object).
 */
import { Redis } from "@upstash/redis/cloudflare";
import {
  type DurableObjectWatchdog,
  durableObjectWatchdog,
  type WatchdogNamespace,
} from "../src/durable-object/index.js";
import { EdgelockError, LockClient, LockInputError, LockNotHeldError } from "../src/index.js";

export { LockWatchdog } from "../src/durable-object/index.js";

export interface HostEnv {
  UPSTASH_REDIS_REST_URL?: string;
  UPSTASH_REDIS_REST_TOKEN?: string;
  EDGELOCK_PREFIX?: string;
  /** The LockWatchdog Durable Object namespace; enables `?watchdog=durable-object`. */
  LOCK_WATCHDOG?: WatchdogNamespace;
}

const ROUTE = /^\/locks\/([^/]+)(?:\/(acquire|release|heartbeat|watchdog))?$/;

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

export async function handleLockApi(
  request: Request,
  client: LockClient,
  watchdog?: DurableObjectWatchdog,
): Promise<Response> {
  const url = new URL(request.url);
  const match = ROUTE.exec(url.pathname);
  if (!match) return json({ error: "not found" }, 404);
  const lock = client.lock(decodeURIComponent(match[1]!));
  const action = match[2];
  try {
    if (!action && request.method === "GET") {
      const ttlMs = await lock.remainingTtlMs();
      return json({ locked: ttlMs !== null, ttlMs });
    }
    if (action === "acquire" && request.method === "POST") {
      const renewed = url.searchParams.get("watchdog") === "durable-object";
      if (renewed && !watchdog) {
        return json({ error: "watchdog=durable-object needs the LOCK_WATCHDOG binding." }, 400);
      }
      const waitMs = optionalInt(url, "waitMs") ?? 0;
      const held = renewed
        ? await lock.tryAcquire({ waitMs })
        : await lock.tryAcquire({ leaseMs: optionalInt(url, "leaseMs") ?? 30_000, waitMs });
      if (!held) {
        const ttl = await lock.remainingTtlMs();
        const retryAfter = String(Math.max(1, Math.ceil((ttl ?? 1000) / 1000)));
        return json({ error: "locked" }, 409, { "retry-after": retryAfter });
      }
      return json({ owner: held.owner, fencingToken: held.fencingToken, leaseMs: held.leaseMs });
    }
    if (action === "release" && request.method === "POST") {
      // No watchdog call: once the last hold is gone, the object's next renewal finds it so.
      await lock.release({ owner: url.searchParams.get("owner") ?? "" });
      return new Response(null, { status: 204 });
    }
    if ((action === "heartbeat" || action === "watchdog") && watchdog) {
      const hold = {
        name: lock.name,
        owner: url.searchParams.get("owner") ?? "",
        prefix: client.prefix,
      };
      if (action === "heartbeat" && request.method === "POST") {
        return json(await watchdog.heartbeat(hold));
      }
      if (action === "watchdog" && request.method === "GET") {
        return json(await watchdog.status(hold));
      }
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
let cached: { url: string; client: LockClient; watchdog?: DurableObjectWatchdog } | undefined;

function clientFor(
  env: HostEnv & { UPSTASH_REDIS_REST_URL: string; UPSTASH_REDIS_REST_TOKEN: string },
) {
  if (cached?.url !== env.UPSTASH_REDIS_REST_URL) {
    const redis = new Redis({
      url: env.UPSTASH_REDIS_REST_URL,
      token: env.UPSTASH_REDIS_REST_TOKEN,
    });
    // Locks acquired over this API outlive the request: no timers (they would die with it).
    const watchdog = env.LOCK_WATCHDOG
      ? durableObjectWatchdog(env.LOCK_WATCHDOG, { heartbeatIntervalMs: 0 })
      : undefined;
    const client = new LockClient({
      redis,
      prefix: env.EDGELOCK_PREFIX ?? "edgelock",
      ...(watchdog ? { watchdog } : {}),
    });
    cached = { url: env.UPSTASH_REDIS_REST_URL, client, ...(watchdog ? { watchdog } : {}) };
  }
  return cached;
}

export default {
  async fetch(
    request: Request,
    env: HostEnv,
    // Structural: this file also compiles with the library's DOM types (tsconfig.build.json).
    ctx: { waitUntil(promise: Promise<unknown>): void },
  ): Promise<Response> {
    const { UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token } = env;
    if (!url || !token) {
      return json(
        { error: "Set UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN (see README)." },
        500,
      );
    }
    const { client, watchdog } = clientFor({
      ...env,
      UPSTASH_REDIS_REST_URL: url,
      UPSTASH_REDIS_REST_TOKEN: token,
    });
    const response = await handleLockApi(request, client, watchdog);
    // A registration still on its way must not be cut off when the response is sent.
    if (watchdog) ctx.waitUntil(watchdog.settled());
    return response;
  },
};

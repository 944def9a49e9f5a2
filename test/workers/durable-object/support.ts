/**
 * Shared by the Durable Object watchdog tests: the server the LockWatchdog renews on, LockClients
 * that use it through counting wrappers (Durable Object calls, Redis script calls), and waits.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Redis } from "@upstash/redis/cloudflare";
import {
  type DurableObjectWatchdog,
  type DurableObjectWatchdogOptions,
  durableObjectWatchdog,
  type WatchdogNamespace,
  type WatchdogStatus,
} from "../../../src/durable-object/index.js";
import { holdKeyOf } from "../../../src/durable-object/messages.js";
import { objectNameFor } from "../../../src/durable-object/shard.js";
import { type HoldKind, LockClient, type RedisLike } from "../../../src/index.js";

interface TestServer {
  kind: string;
  url: string;
  token: string;
}

const servers: TestServer[] = JSON.parse(env.EDGELOCK_TEST_SERVERS);

/** The server the LockWatchdog renews on (its UPSTASH_REDIS_REST_* bindings point there). */
export const server: TestServer = (() => {
  const first = servers.find((each) => each.url === env.UPSTASH_REDIS_REST_URL);
  if (!first) throw new Error("UPSTASH_REDIS_REST_URL is not one of the test servers");
  return first;
})();

/** Durable Object calls by route (register, deregister, heartbeat, status). */
export interface CountingNamespace extends WatchdogNamespace {
  readonly calls: Record<string, number>;
  total(): number;
  /** Holds back calls of `route` (counted when made, sent when resumed) until `resume()`. */
  pause(route: string): { resume(): void };
}

export function countingNamespace(inner: WatchdogNamespace = env.LOCK_WATCHDOG): CountingNamespace {
  const calls: Record<string, number> = {};
  const paused = new Map<string, Promise<void>>();
  return {
    calls,
    total: () => Object.values(calls).reduce((sum, n) => sum + n, 0),
    pause(route) {
      let resume = () => {};
      paused.set(
        route,
        new Promise<void>((resolve) => {
          resume = resolve;
        }),
      );
      return {
        resume: () => {
          paused.delete(route);
          resume();
        },
      };
    },
    idFromName: (name) => inner.idFromName(name),
    get: (id) => {
      const stub = inner.get(id);
      return {
        async fetch(input, init) {
          const route = new URL(input).pathname.split("/").pop() ?? "?";
          calls[route] = (calls[route] ?? 0) + 1;
          await paused.get(route);
          return stub.fetch(input, init);
        },
      };
    },
  };
}

/** Script calls (EVAL/EVALSHA) a RedisLike received. */
export function countingRedis(inner: RedisLike): RedisLike & { readonly calls: number } {
  let calls = 0;
  return {
    get calls() {
      return calls;
    },
    eval(script, keys, args) {
      calls += 1;
      return inner.eval(script, keys, args);
    },
    evalsha(sha, keys, args) {
      calls += 1;
      return inner.evalsha(sha, keys, args);
    },
  };
}

/**
 * The watchdog timeout of tests whose holds must live on renewals: long enough that a loaded
 * machine (CI: workerd, the REST server and other test files on 2 cores) stalling an alarm or an
 * answer for a second ends no hold. An acquire answered after its first lease is lost on arrival.
 */
export const STEADY_TIMEOUT_MS = 2_000;

let prefixes = 0;

export interface WatchdogBed {
  readonly client: LockClient;
  readonly watchdog: DurableObjectWatchdog;
  readonly namespace: CountingNamespace;
  /** Script calls this client sent (the object's renewals are not among them). */
  redisCalls(): number;
}

/** A LockClient with a fresh prefix whose watchdog is the LockWatchdog. */
export function watchdogBed(
  watchdogTimeoutMs: number,
  options: DurableObjectWatchdogOptions = {},
  prefix?: string,
): WatchdogBed {
  prefixes += 1;
  const namespace = countingNamespace();
  const redis = countingRedis(new Redis({ url: server.url, token: server.token }));
  const watchdog = durableObjectWatchdog(namespace, options);
  const client = new LockClient({
    redis,
    prefix: prefix ?? `do${Date.now().toString(36)}${prefixes}`,
    watchdogTimeoutMs,
    watchdog,
  });
  return { client, watchdog, namespace, redisCalls: () => redis.calls };
}

/** A plain client (in-process watchdog) on the same server and prefix, e.g. a second owner. */
export function plainClient(prefix: string): LockClient {
  return new LockClient({ redis: new Redis({ url: server.url, token: server.token }), prefix });
}

/** The stub of the object (sharded by lock) that renews lock (or semaphore) `name` of `client`. */
export function objectOf(client: LockClient, name: string, kind: HoldKind = "lock") {
  const key = holdKeyOf(kind, client.prefix, name);
  const id = env.LOCK_WATCHDOG.idFromName(objectNameFor("lock", key, ""));
  return env.LOCK_WATCHDOG.get(id);
}

/** What the object of lock (or semaphore) `name` still keeps: its alarm and edgelock's tables. */
export function objectLeft(client: LockClient, name: string, kind: HoldKind = "lock") {
  return runInDurableObject(objectOf(client, name, kind), async (_instance: unknown, state) => ({
    alarm: await state.storage.getAlarm(),
    tables: state.storage.sql
      .exec("SELECT name FROM sqlite_master WHERE name LIKE 'edgelock_%'")
      .toArray().length,
  }));
}

export function renewals(status: WatchdogStatus): number {
  return status.state === "unknown" ? 0 : status.renewals;
}

export { sleepMs, until } from "../clients.js";

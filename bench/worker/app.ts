/**
 * The bench's Worker: what a user runs. One counter per route, incremented by a read (GET) and a
 * write (SET) through @upstash/redis inside a lock, so that only mutual exclusion keeps it exact.
 * The same app takes the lock several ways, so that the bench compares them in one Worker:
 *
 *   POST /edgelock/:counter        withLock() from edgelock/hono, library defaults (no `wait`)
 *   POST /edgelock-poll/:counter   the same with `wait: { mode: "poll" }` (queue-directed polling)
 *   POST /edgelock-push/:counter   the same with `wait: { mode: "push" }` (parked, handed over)
 *   POST /edgelock-blind/:counter  polling, the pace hints of busy replies hidden (backoff only)
 *   POST /upstash-lock/:counter    @upstash/lock around the handler
 *
 * and each under `/burst/…` (the cold burst): a BURST_SECTION_MS sleep under a lock waited for
 * BURST_WAIT_MS, 409 after; no Redis command inside, so every command counted is the lock's.
 *
 * 200 with { value } once incremented; 409 when the lock stayed busy (the sender re-sends).
 * Every answer carries LOCK_COMMANDS_HEADER: the Redis commands the lock sent in this invocation.
 * Imports the sources; an app of your own imports "edgelock" and "edgelock/hono".
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { Lock } from "@upstash/lock";
import { Redis } from "@upstash/redis/cloudflare";
import { type Context, Hono } from "hono";
import { createMiddleware } from "hono/factory";
import { withLock } from "../../src/hono/index.js";
import { LockClient } from "../../src/index.js";
import type { RedisLike } from "../../src/transport/redis-like.js";
import { blindRedis } from "../peers/blind-redis.js";
import {
  BURST_SECTION_MS,
  BURST_WAIT_MS,
  counterKey,
  INVOCATION_STARTED_HEADER,
  LOCK_COMMANDS_HEADER,
  SECTION_STARTED_HEADER,
  WORKER_LIBRARIES,
  type WorkerLibrary,
} from "./routes.js";

export interface BenchWorkerBindings {
  UPSTASH_REDIS_REST_URL: string;
  UPSTASH_REDIS_REST_TOKEN: string;
}

type BenchWorkerEnv = { Bindings: BenchWorkerBindings };

/** Every library: 10 s leases, as in the other scenarios (no lock expires during a run). */
export const WORKER_LEASE_MS = 10_000;
/** edgelock's withLock() waits up to this long, then answers 409 (so does its poll budget). */
export const WORKER_WAIT_MS = 60_000;
/** @upstash/lock: its default 100 ms delay, and as many attempts as fit in WORKER_WAIT_MS. */
export const UPSTASH_LOCK_DELAY_MS = 100;
/** @upstash/lock's typings name the CommonJS build of @upstash/redis: same class, other file. */
type LockRedis = ConstructorParameters<typeof Lock>[0]["redis"];

/** The lock commands of the current invocation (each a billed command and a subrequest). */
const invocation = new AsyncLocalStorage<{ lockCommands: number }>();
const countLockCommand = () => {
  const store = invocation.getStore();
  if (store !== undefined) store.lockCommands += 1;
};

/**
 * Counts the commands edgelock sends (EVAL and EVALSHA; push mode's BLPOP through exec, or its
 * subscription to a lock's hand-off channel: one request).
 */
function countedRedis(redis: Redis): RedisLike {
  return {
    subscribe: (channel) => {
      countLockCommand();
      return redis.subscribe(channel);
    },
    exec: (command) => {
      countLockCommand();
      return redis.exec(command);
    },
    eval: (script, keys, args) => {
      countLockCommand();
      return redis.eval(script, keys, args);
    },
    evalsha: (sha, keys, args) => {
      countLockCommand();
      return redis.evalsha(sha, keys, args);
    },
  };
}

/** Counts the commands @upstash/lock sends for acquire and release (SET NX PX, EVAL). */
function countedLockRedis(redis: Redis): LockRedis {
  const counted = {
    set: (...args: Parameters<Redis["set"]>) => {
      countLockCommand();
      return redis.set(...args);
    },
    eval: (...args: Parameters<Redis["eval"]>) => {
      countLockCommand();
      return redis.eval(...args);
    },
  };
  return counted as unknown as LockRedis;
}

type EdgelockLibrary = Exclude<WorkerLibrary, "upstash-lock">;

interface IsolateClients {
  readonly redis: Redis;
  readonly upstashLockRedis: LockRedis;
  readonly edgelock: Readonly<Record<EdgelockLibrary, LockClient>>;
}

/** Built once per isolate from the bindings, as a Worker keeps its clients. */
let clients: IsolateClients | undefined;
function clientsFor(env: BenchWorkerBindings): IsolateClients {
  if (clients === undefined) {
    const redis = new Redis({
      url: env.UPSTASH_REDIS_REST_URL,
      token: env.UPSTASH_REDIS_REST_TOKEN,
    });
    clients = {
      redis,
      upstashLockRedis: countedLockRedis(redis),
      edgelock: {
        // No `wait` option: what a user's Worker gets.
        edgelock: new LockClient({ redis: countedRedis(redis), prefix: "bench-worker" }),
        "edgelock-poll": new LockClient({
          redis: countedRedis(redis),
          prefix: "bench-worker",
          wait: { mode: "poll" },
        }),
        "edgelock-push": new LockClient({
          redis: countedRedis(redis),
          prefix: "bench-worker",
          wait: { mode: "push" },
        }),
        "edgelock-blind": new LockClient({
          redis: blindRedis(countedRedis(redis)),
          prefix: "bench-worker",
          wait: { mode: "poll" },
        }),
      },
    };
  }
  return clients;
}

/** Every route is `/<library>/:counter`. */
const counterOf = (c: Context<BenchWorkerEnv>) => c.req.param("counter") ?? "";
const lockName = (c: Context<BenchWorkerEnv>) => `counter:${counterOf(c)}`;

/**
 * @upstash/lock as a middleware: acquire (SET NX PX, retried for `waitMs` at its default
 * delay), run the handler, release.
 */
const upstashLock = (waitMs: number) =>
  createMiddleware<BenchWorkerEnv>(async (c, next) => {
    const lock = new Lock({
      id: `upstash-lock:${lockName(c)}`,
      redis: clientsFor(c.env).upstashLockRedis,
      lease: WORKER_LEASE_MS,
      retry: { attempts: waitMs / UPSTASH_LOCK_DELAY_MS, delay: UPSTASH_LOCK_DELAY_MS },
    });
    if (!(await lock.acquire())) return c.text("busy", 409);
    try {
      await next();
    } finally {
      await lock.release();
    }
  });

/** The critical section: read, increment, write. Racy on purpose: the lock keeps it exact. */
async function increment(c: Context<BenchWorkerEnv>): Promise<Response> {
  const { redis } = clientsFor(c.env);
  const key = counterKey(counterOf(c));
  const value = Number((await redis.get<number>(key)) ?? 0) + 1;
  await redis.set(key, value);
  return c.json({ value });
}

/** The cold burst's section: a sleep under the lock (the lock's commands are all that is sent). */
async function burstSection(c: Context<BenchWorkerEnv>): Promise<Response> {
  c.header(SECTION_STARTED_HEADER, String(Date.now()));
  await new Promise((resolve) => setTimeout(resolve, BURST_SECTION_MS));
  return c.json({ ok: true });
}

export function createBenchWorkerApp(): Hono<BenchWorkerEnv> {
  const app = new Hono<BenchWorkerEnv>();
  app.use("*", async (c, next) => {
    const startedAt = Date.now();
    const store = { lockCommands: 0 };
    await invocation.run(store, next);
    c.header(LOCK_COMMANDS_HEADER, String(store.lockCommands));
    c.header(INVOCATION_STARTED_HEADER, String(startedAt));
  });
  const edgelock = (library: EdgelockLibrary, waitMs: number) =>
    withLock<BenchWorkerEnv>({
      client: (c) => clientsFor(c.env).edgelock[library],
      key: lockName,
      waitMs,
      leaseMs: WORKER_LEASE_MS,
    });
  for (const library of WORKER_LIBRARIES) {
    if (library === "upstash-lock") {
      app.post(`/${library}/:counter`, upstashLock(WORKER_WAIT_MS), increment);
      app.post(`/burst/${library}/:counter`, upstashLock(BURST_WAIT_MS), burstSection);
    } else {
      app.post(`/${library}/:counter`, edgelock(library, WORKER_WAIT_MS), increment);
      app.post(`/burst/${library}/:counter`, edgelock(library, BURST_WAIT_MS), burstSection);
    }
  }
  return app;
}

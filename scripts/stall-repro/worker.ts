/**
 * The Worker of the stall reproduction (issue 32, "wrangler dev stalls"; run.ts starts it under
 * `wrangler dev` and fires at it). One counter per name, incremented by a GET and a SET inside
 * the lock, as a new user would write it:
 *
 *   POST /inc/<push|poll>/:name    hono's withLock() (an owner scope per request)
 *   POST /plain/<push|poll>/:name  client.lock(name).acquire() / release(), outside any scope
 *   GET  /debug                    the requests in flight: their Redis calls so far, pending ones
 *                                  marked, and the client's events
 *
 * Query: `wait` (waitMs, default 30 000), `hold` (ms slept between the GET and the SET), `id` (the
 * request's name in /debug). Every answer carries `x-trace`: the request's Redis calls (name,
 * start and end in ms from the request's start, a short note: the reply's head, or for a stream
 * when it was confirmed and when each word came) and the client's events (acquired, notAcquired,
 * released, lockLost). The trace holds no token and no script text.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { Redis } from "@upstash/redis/cloudflare";
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { withLock } from "../../src/hono/index.js";
import { LockClient, LockWaitTimeoutError } from "../../src/index.js";
import type { RedisLike } from "../../src/transport/redis-like.js";

type Bindings = { UPSTASH_REDIS_REST_URL: string; UPSTASH_REDIS_REST_TOKEN: string };
type Env = { Bindings: Bindings };
type Mode = "push" | "poll";

interface Call {
  readonly op: string;
  readonly t0: number;
  t1?: number;
  note?: string;
}

interface Trace {
  readonly id: string;
  readonly start: number;
  readonly calls: Call[];
  readonly events: unknown[];
}

const traces = new AsyncLocalStorage<Trace>();
const inFlight = new Map<string, Trace>();

function shown(trace: Trace, now: number) {
  return {
    id: trace.id,
    ms: now - trace.start,
    calls: trace.calls.map((call) => [
      call.op,
      call.t0 - trace.start,
      call.t1 === undefined ? "PENDING" : call.t1 - trace.start,
      call.note,
    ]),
    events: trace.events,
  };
}

/** Records every call edgelock makes in the current request's trace. */
function traced(redis: Redis): RedisLike {
  const record = async <T>(op: string, run: () => Promise<T>): Promise<T> => {
    const call: Call = { op, t0: Date.now() };
    traces.getStore()?.calls.push(call);
    try {
      const reply = await run();
      call.note = JSON.stringify(reply)?.slice(0, 60);
      return reply;
    } catch (error) {
      call.note = `${(error as Error).name}: ${(error as Error).message.slice(0, 80)}`;
      throw error;
    } finally {
      call.t1 = Date.now();
    }
  };
  return {
    eval: (script, keys, args) => record("eval", () => redis.eval(script, keys, args)),
    evalsha: (sha, keys, args) => record("evalsha", () => redis.evalsha(sha, keys, args)),
    exec: (command) => record(`exec ${command[0]}`, () => redis.exec(command)),
    subscribe: (channel) => {
      const call: Call = { op: `subscribe …${channel.slice(-5)}`, t0: Date.now(), note: "" };
      traces.getStore()?.calls.push(call);
      const subscription = redis.subscribe(channel);
      const note = (what: string) => {
        call.note += ` ${what}@${Date.now() - call.t0}`;
      };
      subscription.on("subscribe", () => note("confirmed"));
      subscription.on("message", () => note("word"));
      subscription.on("error", (error) => note(`error ${error.message.slice(0, 60)}`));
      return {
        on: (type, listener) => subscription.on(type as never, listener as never),
        unsubscribe: () => {
          call.t1 = Date.now();
          return subscription.unsubscribe();
        },
      };
    },
  };
}

let clients:
  | { readonly redis: Redis; readonly push: LockClient; readonly poll: LockClient }
  | undefined;
function clientsFor(env: Bindings) {
  if (clients === undefined) {
    const redis = new Redis({
      url: env.UPSTASH_REDIS_REST_URL,
      token: env.UPSTASH_REDIS_REST_TOKEN,
      enableTelemetry: false,
    });
    const listened = (client: LockClient) => {
      for (const type of ["acquired", "notAcquired", "released", "lockLost"] as const) {
        client.on(type, (event: object) =>
          traces.getStore()?.events.push({ ...event, at: Date.now() }),
        );
      }
      return client;
    };
    clients = {
      redis,
      push: listened(
        new LockClient({ redis: traced(redis), prefix: "stall", wait: { mode: "push" } }),
      ),
      poll: listened(
        new LockClient({ redis: traced(redis), prefix: "stall", wait: { mode: "poll" } }),
      ),
    };
  }
  return clients;
}

const waitMsOf = (c: Context<Env>) => Number(c.req.query("wait") ?? 30_000);

async function increment(c: Context<Env>): Promise<Response> {
  const { redis } = clientsFor(c.env);
  const key = `stall:value:${c.req.param("name")}`;
  const value = Number((await redis.get<number>(key)) ?? 0) + 1;
  const hold = Number(c.req.query("hold") ?? 0);
  if (hold > 0) await new Promise((resolve) => setTimeout(resolve, hold));
  await redis.set(key, value);
  return c.json({ value });
}

// One withLock() per mode and waitMs, built at first use.
const middlewares = new Map<string, MiddlewareHandler>();
function locked(mode: Mode): MiddlewareHandler<Env> {
  return (c, next) => {
    const waitMs = waitMsOf(c);
    let middleware = middlewares.get(`${mode} ${waitMs}`);
    if (middleware === undefined) {
      middleware = withLock<Env>({
        client: (c) => clientsFor(c.env)[mode],
        key: (c) => `counter:${c.req.param("name")}`,
        waitMs,
        leaseMs: 10_000,
      }) as MiddlewareHandler;
      middlewares.set(`${mode} ${waitMs}`, middleware);
    }
    return middleware(c, next);
  };
}

const app = new Hono<Env>();
app.get("/debug", (c) => c.json([...inFlight.values()].map((trace) => shown(trace, Date.now()))));
app.use("/inc/*", traceRequest);
app.use("/plain/*", traceRequest);
for (const mode of ["push", "poll"] as const) {
  app.post(`/inc/${mode}/:name`, locked(mode), increment);
  app.post(`/plain/${mode}/:name`, async (c) => {
    try {
      const held = await clientsFor(c.env)
        [mode].lock(`counter:${c.req.param("name")}`)
        .acquire({ waitMs: waitMsOf(c), leaseMs: 10_000 });
      try {
        return await increment(c);
      } finally {
        await held.release();
      }
    } catch (error) {
      if (error instanceof LockWaitTimeoutError) return c.text("busy", 409);
      throw error;
    }
  });
}

async function traceRequest(c: Context<Env>, next: () => Promise<void>): Promise<void> {
  const trace: Trace = {
    id: c.req.query("id") ?? crypto.randomUUID(),
    start: Date.now(),
    calls: [],
    events: [],
  };
  inFlight.set(trace.id, trace);
  try {
    await traces.run(trace, next);
  } finally {
    inFlight.delete(trace.id);
    c.header("x-trace", JSON.stringify(shown(trace, Date.now())));
  }
}

export default app;

/**
 * Type-level test, checked by `npx tsc` (never run): the middleware's option callbacks see the
 * app's `c.env` and `c.var`, and what must not compile does not.
 */
import { Hono } from "hono";
import { expectTypeOf } from "vitest";
import { idempotency, middlewareFor, stripeEventId, withLock } from "../../../src/hono/index.js";
import {
  LockClient,
  type LockHandle,
  type MultiLockHandle,
  type PermitHandle,
  type QuorumLockHandle,
  type RedisLike,
  type RedLock,
} from "../../../src/index.js";

interface AppBindings {
  UPSTASH_REDIS_REST_URL: string;
}
declare function locksFor(env: AppBindings): LockClient;
declare function redisFor(env: AppBindings): RedisLike;
declare const redLock: RedLock;

const app = new Hono<{ Bindings: AppBindings; Variables: { customer: string } }>();
const typed = middlewareFor(app);

// No type arguments: c.env is the app's Bindings, c.var its Variables.
app.post(
  "/webhooks/stripe",
  typed.idempotency({
    client: (c) => locksFor(c.env),
    key: stripeEventId(),
    tenant: (c) => c.var.customer,
  }),
  typed.withLock({
    client: (c) => locksFor(c.env),
    key: (c) => `customer:${c.get("customer")}`,
  }),
  (c) => {
    expectTypeOf(c.env).toEqualTypeOf<AppBindings>();
    expectTypeOf(c.get("lock")).toEqualTypeOf<LockHandle>();
    expectTypeOf(c.get("idempotency").lock).toEqualTypeOf<LockHandle>();
    return c.text(c.env.UPSTASH_REDIS_REST_URL);
  },
);
app.post(
  "/payments",
  typed.idempotency({ redis: (c) => redisFor(c.env) }),
  typed.withLock({
    lock: (c) => locksFor(c.env).multiLock([locksFor(c.env).lock(c.var.customer)]),
    client: (c) => locksFor(c.env),
  }),
  (c) => {
    expectTypeOf(c.get("lock")).toEqualTypeOf<MultiLockHandle>();
    return c.json(c.get("lock").fencingTokens);
  },
);
app.use(
  typed.withLock({ client: (c) => locksFor(c.env), key: (c) => c.env.UPSTASH_REDIS_REST_URL }),
);

// concurrencyLimit(): the key callback sees the app's context; c.get("permit") is typed.
app.post(
  "/summaries",
  typed.concurrencyLimit({
    client: (c) => locksFor(c.env),
    key: (c) => `upstream:${c.var.customer}`,
    permits: 10,
  }),
  (c) => {
    expectTypeOf(c.env).toEqualTypeOf<AppBindings>();
    expectTypeOf(c.get("permit")).toEqualTypeOf<PermitHandle>();
    return c.json({ permits: c.get("permit").permits });
  },
);
// @ts-expect-error permits is required
typed.concurrencyLimit({ client: (c) => locksFor(c.env), name: "all" });

app.post(
  "/quorum",
  typed.withLock({ lock: (c) => redLock.lock(`customer:${c.var.customer}`), leaseMs: 10_000 }),
  (c) => {
    expectTypeOf(c.get("lock")).toEqualTypeOf<QuorumLockHandle>();
    return c.json(c.get("lock").fencingTokens);
  },
);

// What must not compile.
typed.withLock({
  client: (c) => locksFor(c.env),
  // @ts-expect-error: the app has no binding of that name
  key: (c) => c.env.NO_SUCH_BINDING,
});
// @ts-expect-error: `key` and `lock` exclude each other
typed.withLock({
  client: locksFor({ UPSTASH_REDIS_REST_URL: "" }),
  key: () => "k",
  lock: () => new LockClient({ redis: redisFor({ UPSTASH_REDIS_REST_URL: "" }) }).lock("k"),
});
// @ts-expect-error: `key` needs `client`
typed.withLock({ key: () => "k" });
// @ts-expect-error: `lock` returns something that can be acquired
typed.withLock({ lock: () => ({ name: "not a lock" }) });
// @ts-expect-error: `scope` is "route" or "shared"
typed.idempotency({ redis: (c) => redisFor(c.env), scope: "global" });
// @ts-expect-error: the handler sees no `lock` variable without withLock()
app.post("/plain", typed.idempotency({ redis: (c) => redisFor(c.env) }), (c) => c.get("lock"));

// The plain functions, no type arguments: the callbacks' c.env is `any` (Hono's createMiddleware
// convention), the handler still sees the app's Env and the middleware's variables.
app.post(
  "/inline",
  idempotency({ redis: (c) => redisFor(c.env) }),
  withLock({ client: (c) => locksFor(c.env), key: (c) => `orders:${c.req.param("id")}` }),
  (c) => {
    expectTypeOf(c.env).toEqualTypeOf<AppBindings>();
    expectTypeOf(c.get("lock")).toEqualTypeOf<LockHandle>();
    expectTypeOf(c.get("idempotency").key).toEqualTypeOf<string>();
    return c.text(c.get("customer"));
  },
);
app.use("/jobs/*", withLock({ client: (c) => locksFor(c.env), key: (c) => c.req.path }));

// The plain functions take the Env as a type argument instead (or any Context without one).
app.post(
  "/explicit",
  withLock<{ Bindings: AppBindings }>({ client: (c) => locksFor(c.env), key: () => "k" }),
  idempotency<{ Bindings: AppBindings }>({ client: (c) => locksFor(c.env) }),
  (c) => c.text(c.get("lock").name + c.get("idempotency").key),
);

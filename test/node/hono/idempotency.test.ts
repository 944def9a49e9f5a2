/**
 * idempotency(): the first request with a key runs and its response is stored; later ones get it
 * replayed; a duplicate in progress gets 409 (or waits for the replay); a reused key with another
 * request gets 422; failures store nothing.
 */
import fc from "fast-check";
import { type Context, Hono } from "hono";
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  type IdempotencyContext,
  type IdempotencyOptions,
  idempotency,
  REPLAY_HEADER,
  stripeEventId,
} from "../../../src/hono/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";
import { executionContext, gate } from "./harness.js";

describe.each(backendKindsUnderTest())("idempotency() on %s", (kind) => {
  const bed = useTestBed(kind);

  /** An app whose handler counts its runs per key; `handler` may replace the default answer. */
  function paymentsApp(
    options: Partial<IdempotencyOptions> = {},
    handler?: (c: Context, run: number) => Response | Promise<Response>,
  ) {
    const runs = new Map<string, number>();
    const app = new Hono();
    app.onError((_error, c) => c.text("handler failed", 500));
    const guard = idempotency({ redis: bed.redis(), prefix: freshPrefix(), ...options });
    app.post("/payments", guard, async (c) => {
      expectTypeOf(c.get("idempotency")).toEqualTypeOf<IdempotencyContext>();
      const { key } = c.get("idempotency");
      const run = (runs.get(key) ?? 0) + 1;
      runs.set(key, run);
      if (handler) return handler(c, run);
      const body = await c.req.json<{ amount: number }>();
      c.header("location", `/payments/${key}`);
      return c.json({ key, run, amount: body.amount }, 201);
    });
    app.post("/refunds", guard, (c) => c.text("refunded"));
    const send = (key: string | undefined, body: unknown = { amount: 10 }, path = "/payments") =>
      app.request(
        path,
        {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(key === undefined ? {} : { "idempotency-key": key }),
          },
          body: JSON.stringify(body),
        },
        {},
        executionContext(),
      );
    return { app, runs, send };
  }

  it("runs the first request and replays its stored response to later ones", async () => {
    const { runs, send } = paymentsApp();
    let before = bed.requests();
    const first = await send("pay-1");
    // lookup, acquire, store, release
    expect(bed.requests() - before).toBe(4);
    expect(first.status).toBe(201);
    expect(first.headers.get(REPLAY_HEADER)).toBeNull();
    const firstBody = await first.text();

    before = bed.requests();
    const again = await send("pay-1");
    expect(bed.requests() - before).toBe(1);
    expect(again.status).toBe(201);
    expect(again.headers.get(REPLAY_HEADER)).toBe("true");
    expect(again.headers.get("location")).toBe("/payments/pay-1");
    expect(again.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await again.text()).toBe(firstBody);
    expect(runs.get("pay-1")).toBe(1);
  });

  it("answers 422 when a key comes back with a different request", async () => {
    const { runs, send } = paymentsApp();
    expect((await send("pay-2", { amount: 10 })).status).toBe(201);
    const otherBody = await send("pay-2", { amount: 99 });
    expect(otherBody.status).toBe(422);
    expect(otherBody.headers.get("content-type")).toBe("application/problem+json");
    expect(runs.get("pay-2")).toBe(1);
  });

  it("answers 422 when a shared scope sees the key on another route", async () => {
    const prefix = freshPrefix();
    const { runs, send } = paymentsApp({ scope: "shared", prefix });
    expect((await send("pay-2s", { amount: 10 })).status).toBe(201);
    // The key layout of edgelock 0.1: records stored before an upgrade stay readable.
    expect(await bed.redis().exists(`${prefix}:{idempotency:pay-2s}:response`)).toBe(1);
    const otherPath = await send("pay-2s", { amount: 10 }, "/refunds");
    expect(otherPath.status).toBe(422);
    expect(runs.get("pay-2s")).toBe(1);
  });

  it("replays regardless of the body when fingerprints are off", async () => {
    const { runs, send } = paymentsApp({ fingerprint: false });
    await send("pay-3", { amount: 10 });
    const res = await send("pay-3", { amount: 99 });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ amount: 10 });
    expect(runs.get("pay-3")).toBe(1);
  });

  it("answers 409 with Retry-After, in one request, while the first one runs", async () => {
    const inside = gate();
    const finish = gate();
    const { runs, send } = paymentsApp({ leaseMs: 20_000 }, async (c) => {
      inside.open();
      await finish.opened;
      return c.text("done", 201);
    });
    const first = send("pay-4");
    await inside.opened;
    const before = bed.requests();
    const duplicate = await send("pay-4");
    expect(bed.requests() - before).toBe(1);
    expect(duplicate.status).toBe(409);
    expect(Number(duplicate.headers.get("retry-after"))).toBeGreaterThanOrEqual(19);
    expect(Number(duplicate.headers.get("retry-after"))).toBeLessThanOrEqual(20);
    finish.open();
    expect((await first).status).toBe(201);
    const later = await send("pay-4");
    expect(later.headers.get(REPLAY_HEADER)).toBe("true");
    expect(runs.get("pay-4")).toBe(1);
  });

  it("once a handler ran here, a duplicate's Retry-After is that run's length, not the 20 s lease", async () => {
    const inside = gate();
    const finish = gate();
    const { send } = paymentsApp({ leaseMs: 20_000 }, async (c) => {
      if (c.req.header("idempotency-key") === "pay-4b") {
        inside.open();
        await finish.opened;
      } else await sleepMs(300);
      return c.text("done", 201);
    });
    expect((await send("pay-4a")).status).toBe(201);
    const first = send("pay-4b");
    await inside.opened;
    const duplicate = await send("pay-4b");
    expect(duplicate.status).toBe(409);
    expect(duplicate.headers.get("retry-after")).toBe("1");
    finish.open();
    expect((await first).status).toBe(201);
  });

  it("lets a duplicate wait for the first response (waitMs) and replays it", async () => {
    const inside = gate();
    const { runs, send } = paymentsApp({ waitMs: 10_000 }, async (c) => {
      inside.open();
      await sleepMs(150);
      return c.text("slow but once", 201);
    });
    const first = send("pay-5");
    await inside.opened;
    const duplicate = await send("pay-5");
    expect(duplicate.status).toBe(201);
    expect(duplicate.headers.get(REPLAY_HEADER)).toBe("true");
    expect(await duplicate.text()).toBe("slow but once");
    expect((await first).headers.get(REPLAY_HEADER)).toBeNull();
    expect(runs.get("pay-5")).toBe(1);
  });

  it("processes concurrent duplicates once and gives all of them the same response", async () => {
    const { runs, send } = paymentsApp({ waitMs: 20_000 }, async (c, run) => {
      await sleepMs(20);
      return c.json({ run }, 201);
    });
    const responses = await Promise.all(Array.from({ length: 16 }, () => send("pay-6")));
    expect(responses.map((res) => res.status)).toEqual(Array(16).fill(201));
    const bodies = await Promise.all(responses.map((res) => res.text()));
    expect(new Set(bodies)).toEqual(new Set(['{"run":1}']));
    expect(responses.filter((res) => res.headers.get(REPLAY_HEADER) === null)).toHaveLength(1);
    expect(runs.get("pay-6")).toBe(1);
  });

  it("processes every key once under random bursts of duplicates", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ key: fc.nat(4), delayMs: fc.nat(30) }), {
          minLength: 1,
          maxLength: 24,
        }),
        async (deliveries) => {
          const { runs, send } = paymentsApp({ waitMs: 20_000 }, async (c, run) => {
            await sleepMs(5);
            return c.json({ run, key: c.get("idempotency").key }, 201);
          });
          const responses = await Promise.all(
            deliveries.map(async ({ key, delayMs }) => {
              await sleepMs(delayMs);
              const res = await send(`burst-${key}`, { amount: key });
              return { key, status: res.status, body: await res.text() };
            }),
          );
          for (const { key, status, body } of responses) {
            expect(status).toBe(201);
            expect(JSON.parse(body)).toEqual({ run: 1, key: `burst-${key}` });
          }
          for (const { key } of deliveries) expect(runs.get(`burst-${key}`)).toBe(1);
        },
      ),
      { numRuns: 8 },
    );
  });

  it("stores nothing when the handler throws, and frees the key for the retry", async () => {
    const { runs, send } = paymentsApp({}, (c, run) => {
      if (run === 1) throw new Error("database down");
      return c.text("ok on retry", 201);
    });
    expect((await send("pay-7")).status).toBe(500);
    const retry = await send("pay-7");
    expect(retry.status).toBe(201);
    expect(retry.headers.get(REPLAY_HEADER)).toBeNull();
    expect(runs.get("pay-7")).toBe(2);
  });

  it("stores nothing for 5xx and for answers that ask to come back (409, 429)", async () => {
    const statuses = [503, 409, 429, 400];
    const { runs, send } = paymentsApp({}, (c, run) =>
      c.text(`run ${run}`, (statuses[run - 1] ?? 200) as 200),
    );
    for (const status of statuses) {
      const res = await send("pay-8");
      expect(res.status).toBe(status);
      expect(res.headers.get(REPLAY_HEADER)).toBeNull();
    }
    // The 400 was final: stored and replayed.
    const replay = await send("pay-8");
    expect(replay.status).toBe(400);
    expect(replay.headers.get(REPLAY_HEADER)).toBe("true");
    expect(runs.get("pay-8")).toBe(4);
  });

  it("answers 400 without a key, or runs unguarded when the key is optional", async () => {
    const required = paymentsApp();
    const missing = await required.send(undefined);
    expect(missing.status).toBe(400);
    expect(required.runs.size).toBe(0);
    const invalid = await required.send("x".repeat(256));
    expect(invalid.status).toBe(400);
    const nonAscii = await required.send("é");
    expect(nonAscii.status).toBe(400);

    const optional = new Hono();
    let ran = 0;
    optional.post("/", idempotency({ redis: bed.redis(), required: false }), (c) => {
      ran += 1;
      return c.text("unguarded");
    });
    const res = await optional.request("/", { method: "POST" }, {}, executionContext());
    expect(await res.text()).toBe("unguarded");
    expect(ran).toBe(1);
  });

  it("keeps keys apart that differ only in braces or escapes", async () => {
    const { runs, send } = paymentsApp();
    for (const key of ["a{b}", "a%7Bb%7D", "a%257Bb%257D"]) {
      expect((await send(key)).headers.get(REPLAY_HEADER)).toBeNull();
    }
    expect([...runs.values()]).toEqual([1, 1, 1]);
  });

  it("replays status and headers without the body when it exceeded maxBodyBytes", async () => {
    const big = "x".repeat(2_000);
    const { send } = paymentsApp({ maxBodyBytes: 1_000 }, (c) => c.text(big, 201));
    const first = await send("pay-9");
    expect(await first.text()).toBe(big);
    const replay = await send("pay-9");
    expect(replay.status).toBe(201);
    expect(replay.headers.get("edgelock-replay-body")).toBe("omitted");
    expect(replay.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(await replay.text()).toBe("");
  });

  it("stores the response for ttlMs beside the key's lock, under one hash tag", async () => {
    const prefix = freshPrefix();
    const { send } = paymentsApp({ prefix, ttlMs: 60_000 });
    await send("pay-10");
    const redis = bed.redis();
    const pttl = await redis.pttl(`${prefix}:{idempotency:POST /payments:pay-10}:response`);
    expect(pttl).toBeGreaterThan(55_000);
    expect(pttl).toBeLessThanOrEqual(60_000);
    expect(await redis.exists(`${prefix}:{idempotency:POST /payments:pay-10}`)).toBe(0);
  });

  it("gives the handler the key and its hold (fencing token, extend)", async () => {
    const { send } = paymentsApp({ leaseMs: 1_000 }, async (c) => {
      const { key, lock } = c.get("idempotency");
      await lock.extend(5_000);
      return c.json({ key, token: lock.fencingToken, leaseMs: lock.leaseMs }, 201);
    });
    expect(await (await send("pay-11")).json()).toEqual({
      key: "pay-11",
      token: 1,
      leaseMs: 5_000,
    });
  });

  it("takes the key from the JSON body (Stripe's event id)", async () => {
    const app = new Hono();
    let runs = 0;
    app.post(
      "/stripe",
      idempotency({ redis: bed.redis(), prefix: freshPrefix(), key: stripeEventId() }),
      async (c) => {
        runs += 1;
        const event = await c.req.json<{ id: string; type: string }>();
        return c.json({ handled: event.type });
      },
    );
    const deliver = () =>
      app.request(
        "/stripe",
        { method: "POST", body: JSON.stringify({ id: "evt_1", type: "invoice.paid" }) },
        {},
        executionContext(),
      );
    expect(await (await deliver()).json()).toEqual({ handled: "invoice.paid" });
    expect((await deliver()).headers.get(REPLAY_HEADER)).toBe("true");
    expect(runs).toBe(1);
  });

  it("runs one event once per endpoint when a provider fans it out to two routes", async () => {
    const app = new Hono();
    const runs = { billing: 0, shipping: 0 };
    const guard = idempotency({ redis: bed.redis(), prefix: freshPrefix(), key: stripeEventId() });
    app.post("/webhooks/billing", guard, (c) => {
      runs.billing += 1;
      return c.json({ endpoint: "billing" });
    });
    app.post("/webhooks/shipping", guard, (c) => {
      runs.shipping += 1;
      return c.json({ endpoint: "shipping" });
    });
    const deliver = (path: string) =>
      app.request(
        path,
        { method: "POST", body: JSON.stringify({ id: "evt_fan", type: "invoice.paid" }) },
        {},
        executionContext(),
      );
    for (const endpoint of ["billing", "shipping"] as const) {
      const first = await deliver(`/webhooks/${endpoint}`);
      expect(first.status).toBe(200);
      expect(first.headers.get(REPLAY_HEADER)).toBeNull();
      expect(await first.json()).toEqual({ endpoint });
    }
    for (const endpoint of ["billing", "shipping"] as const) {
      const retry = await deliver(`/webhooks/${endpoint}`);
      expect(retry.headers.get(REPLAY_HEADER)).toBe("true");
      expect(await retry.json()).toEqual({ endpoint });
    }
    expect(runs).toEqual({ billing: 1, shipping: 1 });
  });

  it("scopes keys by method and route pattern, and by tenant when given", async () => {
    const prefix = freshPrefix();
    const app = new Hono();
    const seen: string[] = [];
    const guard = idempotency({
      client: bed.client({ prefix }),
      fingerprint: false,
      tenant: (c) => c.req.header("x-tenant"),
    });
    app.on(["POST", "PUT"], "/orders/:id", guard, (c) => {
      seen.push(`${c.req.method} ${c.req.param("id")} ${c.req.header("x-tenant") ?? "-"}`);
      return c.text("ok");
    });
    const send = (method: string, path: string, tenant?: string) =>
      app.request(
        path,
        {
          method,
          headers: { "idempotency-key": "k{1}", ...(tenant ? { "x-tenant": tenant } : {}) },
        },
        {},
        executionContext(),
      );
    // One route pattern: another order id is the same scope, another method or tenant is not.
    await send("POST", "/orders/1");
    expect((await send("POST", "/orders/2")).headers.get(REPLAY_HEADER)).toBe("true");
    await send("PUT", "/orders/1");
    await send("POST", "/orders/1", "acme:1");
    expect((await send("POST", "/orders/3", "acme:1")).headers.get(REPLAY_HEADER)).toBe("true");
    expect(seen).toEqual(["POST 1 -", "PUT 1 -", "POST 1 acme:1"]);
    const redis = bed.redis();
    expect(await redis.exists(`${prefix}:{idempotency:POST /orders/%3Aid:k%7B1%7D}:response`)).toBe(
      1,
    );
    expect(
      await redis.exists(`${prefix}:{idempotency:@acme%3A1:POST /orders/%3Aid:k%7B1%7D}:response`),
    ).toBe(1);
  });

  it("tells apart one sub-app mounted twice, and a route whose pattern has braces", async () => {
    const runs: string[] = [];
    const guard = idempotency({
      client: bed.client({ prefix: freshPrefix() }),
      fingerprint: false,
    });
    const provider = new Hono();
    provider.post("/events", guard, (c) => {
      runs.push(c.req.path);
      return c.text("ok");
    });
    const app = new Hono();
    app.route("/billing", provider);
    app.route("/shipping", provider);
    app.post("/orders/:id{[0-9]+}", guard, (c) => {
      runs.push(c.req.path);
      return c.text("ok");
    });
    const send = (path: string) =>
      app.request(
        path,
        { method: "POST", headers: { "idempotency-key": "evt_2" } },
        {},
        executionContext(),
      );
    for (const path of ["/billing/events", "/shipping/events", "/orders/7", "/orders/8"]) {
      expect((await send(path)).status).toBe(200);
    }
    expect(runs).toEqual(["/billing/events", "/shipping/events", "/orders/7"]);
  });
});

/**
 * The Hono middleware inside workerd (a HEAD request's concurrencyLimit() permit among them),
 * through @upstash/redis/cloudflare, against the local server; and the webhook example app end
 * to end.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Redis } from "@upstash/redis/cloudflare";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createApp } from "../../examples/webhook-worker/src/app.js";
import { SIGNATURE_HEADER, signPayload } from "../../examples/webhook-worker/src/signature.js";
import {
  concurrencyLimit,
  idempotency,
  type MiddlewareFailure,
  REPLAY_HEADER,
  standardWebhookId,
  withLock,
} from "../../src/hono/index.js";
import { PUT } from "../../src/hono/response-store.js";
import { LockClient, type RedisLike } from "../../src/index.js";

const servers: { kind: string; url: string; token: string }[] = JSON.parse(
  env.EDGELOCK_TEST_SERVERS,
);
let prefixes = 0;
const freshPrefix = () => `wh${Date.now().toString(36)}${++prefixes}`;

describe.each(servers)("Hono middleware in workerd on $kind", (server) => {
  const redis = () => new Redis({ url: server.url, token: server.token });

  it("withLock(): releases on throw, answers 409 with Retry-After, re-enters in the scope", async () => {
    const client = new LockClient({ redis: redis(), prefix: freshPrefix() });
    const app = new Hono();
    app.onError((_error, c) => c.text("failed", 500));
    app.post(
      "/jobs/:id",
      withLock({ client, key: (c) => `job:${c.req.param("id")}` }),
      async (c) => {
        if (c.req.query("fail")) throw new Error("handler failed");
        const inner = await client.lock(`job:${c.req.param("id")}`).acquire({ leaseMs: 5_000 });
        await inner.release();
        return c.json({
          token: c.get("lock").fencingToken,
          reentered: inner.fencingToken === c.get("lock").fencingToken,
        });
      },
    );
    const call = (query = "") =>
      app.request(`/jobs/1${query}`, { method: "POST" }, env, createExecutionContext());

    expect((await call("?fail=1")).status).toBe(500);
    expect(await client.lock("job:1").isLocked()).toBe(false);
    expect(await (await call()).json()).toEqual({ token: 2, reentered: true });

    const holder = await client.lock("job:1").acquire({ leaseMs: 3_000 });
    const busy = await call();
    expect(busy.status).toBe(409);
    // Watchdog mode: the holds this route saw end were short, so 1 s, not the holder's 3 s lease.
    expect(busy.headers.get("retry-after")).toBe("1");
    await holder.release();
  });

  it("concurrencyLimit(): a HEAD request's permit comes back at once (Hono drops the body)", async () => {
    const client = new LockClient({ redis: redis(), prefix: freshPrefix() });
    const app = new Hono();
    // Watchdog mode, the default: a permit kept would be renewed while the isolate lives.
    app.get("/report", concurrencyLimit({ client, name: "report", permits: 2 }), (c) =>
      c.text("the report"),
    );
    const call = (method: string) =>
      app.request("/report", { method }, env, createExecutionContext());
    const heads = await Promise.all([call("HEAD"), call("HEAD")]);
    expect(heads.map((res) => [res.status, res.body])).toEqual([
      [200, null],
      [200, null],
    ]);
    expect(await client.semaphore("report").state()).toMatchObject({ available: 2, holds: 0 });
    const get = await call("GET");
    expect(get.status).toBe(200);
    expect(await get.text()).toBe("the report");
  });

  it("concurrencyLimit(): a body nobody reads returns its permit after unreadBodyMs, in waitUntil", async () => {
    const client = new LockClient({ redis: redis(), prefix: freshPrefix() });
    const app = new Hono();
    app.get(
      "/report",
      concurrencyLimit({ client, name: "report", permits: 1, unreadBodyMs: 300 }),
      (c) => c.text("the report"),
    );
    const ctx = createExecutionContext();
    const unread = await app.request("/report", {}, env, ctx);
    expect(unread.status).toBe(200);
    expect(await client.semaphore("report").availablePermits()).toBe(0);
    // The deadline and the release run in the invocation's waitUntil.
    await waitOnExecutionContext(ctx);
    expect(await client.semaphore("report").availablePermits()).toBe(1);
    expect(await unread.text()).toBe("the report");
  });

  it("idempotency(): replays, 422 on another request, stores nothing on failure", async () => {
    let runs = 0;
    const app = new Hono();
    app.onError((_error, c) => c.text("failed", 500));
    app.post("/pay", idempotency({ redis: redis(), prefix: freshPrefix() }), async (c) => {
      runs += 1;
      const body = await c.req.text();
      if (body === "throw") throw new Error("handler failed");
      if (body === "unavailable") return c.text("later", 503);
      return c.text(`paid ${body}`, 201);
    });
    const pay = (key: string, body: string) =>
      app.request(
        "/pay",
        { method: "POST", headers: { "idempotency-key": key }, body },
        env,
        createExecutionContext(),
      );

    expect(await (await pay("k1", "10")).text()).toBe("paid 10");
    const replay = await pay("k1", "10");
    expect(replay.status).toBe(201);
    expect(replay.headers.get(REPLAY_HEADER)).toBe("true");
    expect(await replay.text()).toBe("paid 10");
    expect((await pay("k1", "99")).status).toBe(422);
    expect(runs).toBe(1);

    expect((await pay("k2", "throw")).status).toBe(500);
    expect((await pay("k2", "unavailable")).status).toBe(503);
    const after = await pay("k2", "20");
    expect(after.headers.get(REPLAY_HEADER)).toBeNull();
    expect(await after.text()).toBe("paid 20");
    expect(runs).toBe(4);
  });

  it("idempotency(): one event fanned out to two routes runs once on each, from a client", async () => {
    const client = new LockClient({ redis: redis(), prefix: freshPrefix() });
    const runs: string[] = [];
    const guard = idempotency({ client, key: standardWebhookId() });
    const app = new Hono();
    for (const endpoint of ["/hooks/billing", "/hooks/shipping"]) {
      app.post(endpoint, guard, (c) => {
        runs.push(endpoint);
        return c.text(endpoint);
      });
    }
    const deliver = (endpoint: string) =>
      app.request(
        endpoint,
        { method: "POST", headers: { "webhook-id": "msg_1" }, body: "{}" },
        env,
        createExecutionContext(),
      );
    for (const endpoint of ["/hooks/billing", "/hooks/shipping"]) {
      expect((await deliver(endpoint)).headers.get(REPLAY_HEADER)).toBeNull();
      const retry = await deliver(endpoint);
      expect(retry.headers.get(REPLAY_HEADER)).toBe("true");
      expect(await retry.text()).toBe(endpoint);
    }
    expect(runs).toEqual(["/hooks/billing", "/hooks/shipping"]);
  });

  it("idempotency(): concurrent duplicates run once, the rest wait for the replay", async () => {
    let runs = 0;
    const app = new Hono();
    app.post(
      "/pay",
      idempotency({ redis: redis(), prefix: freshPrefix(), waitMs: 15_000 }),
      async (c) => {
        runs += 1;
        await new Promise((resolve) => setTimeout(resolve, 30));
        return c.json({ run: runs });
      },
    );
    const responses = await Promise.all(
      Array.from({ length: 8 }, () =>
        app.request(
          "/pay",
          { method: "POST", headers: { "idempotency-key": "same" } },
          env,
          createExecutionContext(),
        ),
      ),
    );
    expect(responses.map((res) => res.status)).toEqual(Array(8).fill(200));
    expect(new Set(await Promise.all(responses.map((res) => res.text())))).toEqual(
      new Set(['{"run":1}']),
    );
    expect(runs).toBe(1);
  });

  it("idempotency(): a failed store keeps the key locked and is retried in waitUntil", async () => {
    const real = redis();
    // The store script as sent: with or without Upstash's key-locking flag.
    const putSources = [PUT.source, PUT.keyLocking.source];
    const putShas = [await PUT.sha1(), await PUT.keyLocking.sha1()];
    let failStores = true;
    const flaky: RedisLike = {
      eval: (script, keys, args) =>
        failStores && putSources.includes(script)
          ? Promise.reject(new Error("fetch failed"))
          : real.eval(script, keys, args),
      evalsha: (sha, keys, args) =>
        failStores && putShas.includes(sha)
          ? Promise.reject(new Error("fetch failed"))
          : real.evalsha(sha, keys, args),
    };
    const failures: MiddlewareFailure[] = [];
    let runs = 0;
    const app = new Hono();
    app.post(
      "/pay",
      idempotency({ redis: flaky, prefix: freshPrefix(), onFailure: (f) => void failures.push(f) }),
      (c) => {
        runs += 1;
        return c.text("done", 201);
      },
    );
    const ctx = createExecutionContext();
    const first = await app.request(
      "/pay",
      { method: "POST", headers: { "idempotency-key": "s" } },
      env,
      ctx,
    );
    expect(await first.text()).toBe("done");
    expect(failures.map((f) => f.kind)).toEqual(["store"]);
    const duplicate = await app.request(
      "/pay",
      { method: "POST", headers: { "idempotency-key": "s" } },
      env,
      createExecutionContext(),
    );
    expect(duplicate.status).toBe(409);
    failStores = false;
    await waitOnExecutionContext(ctx);
    const replay = await app.request(
      "/pay",
      { method: "POST", headers: { "idempotency-key": "s" } },
      env,
      createExecutionContext(),
    );
    expect(replay.headers.get(REPLAY_HEADER)).toBe("true");
    expect(runs).toBe(1);
  });

  it("the webhook example processes a signed event once and refuses forged ones", async () => {
    const app = createApp();
    const bindings = {
      UPSTASH_REDIS_REST_URL: server.url,
      UPSTASH_REDIS_REST_TOKEN: server.token,
      WEBHOOK_SECRET: "whsec_test",
      WORK_MS: "5",
    };
    const id = `evt_${freshPrefix()}`;
    const customer = `cus_${freshPrefix()}`;
    const body = JSON.stringify({ id, type: "payment.succeeded", data: { customer, amount: 250 } });
    const send = async (secret: string) =>
      app.request(
        "/webhooks/payments",
        { method: "POST", headers: { [SIGNATURE_HEADER]: await signPayload(secret, body) }, body },
        bindings,
        createExecutionContext(),
      );
    const answers = await Promise.all([send("whsec_test"), send("whsec_test")]);
    const statuses = answers.map((res) => res.status).sort();
    // One processed; the concurrent duplicate was turned away (409) or, if late, replayed (200).
    expect(statuses[0]).toBe(200);
    expect([200, 409]).toContain(statuses[1]);
    const replay = await send("whsec_test");
    expect(replay.headers.get(REPLAY_HEADER)).toBe("true");
    expect(await replay.json()).toEqual({ received: id, customer, balance: 250 });
    expect((await send("whsec_wrong")).status).toBe(401);
    const balance = await app.request(
      `/customers/${customer}`,
      {},
      bindings,
      createExecutionContext(),
    );
    expect(await balance.json()).toEqual({ customer, balance: 250 });
  });
});

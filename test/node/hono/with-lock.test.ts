/** withLock(): acquire before the handler, release after it (also on throw), 409 when busy. */
import { Hono } from "hono";
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  type MiddlewareFailure,
  middlewareFor,
  type WithLockSettings,
  withLock,
} from "../../../src/hono/index.js";
import { busyRetryAfter } from "../../../src/hono/responses.js";
import { LockClient, type LockHandle, type MultiLockHandle } from "../../../src/index.js";
import { RELEASE } from "../../../src/locks/exclusive/release.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sentScript } from "../../support/sent-script.js";
import {
  freshPrefix,
  sleepMs,
  slowScriptAnswers,
  until,
  useTestBed,
} from "../exclusive/testbed.js";
import { executionContext, failingScripts, gate, overlapMeter } from "./harness.js";

describe("withLock()'s Retry-After", () => {
  it("is the longest recent hold, never past the holder's lease; before any, the lease (leaseMs) or 1 s", () => {
    // Issue 44 item 6: 300 ms handlers under a 10 s lease are told 1 s, not 10.
    expect(busyRetryAfter(9_800, true, 300)).toBe(1);
    expect(busyRetryAfter(4_500, true, 200)).toBe(1);
    expect(busyRetryAfter(2_000, true, 5_000)).toBe(2);
    expect(busyRetryAfter(4_500, true, null)).toBe(5);
    expect(busyRetryAfter(null, true, null)).toBe(1);
    // Watchdog mode: the renewed lease (about 30 s) is no estimate of the holder's end.
    expect(busyRetryAfter(29_000, false, null)).toBe(1);
    expect(busyRetryAfter(29_000, false, 1_500)).toBe(2);
    expect(busyRetryAfter(400, false, 3_000)).toBe(1);
    expect(busyRetryAfter(null, false, 2_100)).toBe(3);
  });
});

describe.each(backendKindsUnderTest())("withLock() on %s", (kind) => {
  const bed = useTestBed(kind);

  function appWith(
    client: LockClient,
    handler: (c: { get(key: "lock"): LockHandle }) => Promise<Response> | Response,
    options: WithLockSettings = {},
  ) {
    const app = new Hono();
    app.onError((_error, c) => c.text("handler failed", 500));
    app.post(
      "/orders/:id",
      withLock({ client, key: (c) => `orders:${c.req.param("id")}`, ...options }),
      (c) => handler(c),
    );
    return app;
  }

  it("holds the lock while the handler runs and releases it after", async () => {
    const client = bed.client();
    const lock = client.lock("orders:1");
    const app = new Hono();
    app.post(
      "/orders/:id",
      withLock({ client, key: (c) => `orders:${c.req.param("id")}` }),
      async (c) => {
        const held = c.get("lock");
        expectTypeOf(held).toEqualTypeOf<LockHandle>();
        return c.json({
          token: held.fencingToken,
          heldInside: await lock.isHeldBy(held.owner),
        });
      },
    );
    const res = await app.request("/orders/1", { method: "POST" }, {}, executionContext());
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ token: 1, heldInside: true });
    expect(await lock.isLocked()).toBe(false);
  });

  it("releases the lock when the handler throws", async () => {
    const client = bed.client();
    const app = appWith(client, () => {
      throw new Error("handler failed");
    });
    const res = await app.request("/orders/2", { method: "POST" }, {}, executionContext());
    expect(res.status).toBe(500);
    expect(await client.lock("orders:2").isLocked()).toBe(false);
    // The next request gets the lock at once, with the next fencing token.
    const next = appWith(client, (c) => Response.json({ token: c.get("lock").fencingToken }));
    const again = await next.request("/orders/2", { method: "POST" }, {}, executionContext());
    expect(await again.json()).toEqual({ token: 2 });
  });

  it("answers 409 with Retry-After from the holder's lease, in one request", async () => {
    const client = bed.client();
    const holder = await client.lock("orders:3").acquire({ leaseMs: 4_500 });
    let ran = false;
    const app = appWith(
      client,
      () => {
        ran = true;
        return new Response("ok");
      },
      { leaseMs: 4_500 },
    );
    const before = bed.requests();
    const res = await app.request("/orders/3", { method: "POST" }, {}, executionContext());
    expect(bed.requests() - before).toBe(1);
    expect(ran).toBe(false);
    expect(res.status).toBe(409);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const body = (await res.json()) as { detail: string };
    expect(body).toMatchObject({ status: 409, title: "Locked" });
    // The lock name (here an order id) stays out of the public answer by default.
    expect(body.detail).not.toContain("orders:3");
    expect(body.detail).toContain("retry after 5 s");
    await holder.release();
  });

  it("names the lock in the 409 body only with exposeLockName", async () => {
    const client = bed.client();
    const holder = await client.lock("orders:31").acquire({ leaseMs: 10_000 });
    const app = appWith(client, () => new Response("ok"), { exposeLockName: true });
    const res = await app.request("/orders/31", { method: "POST" }, {}, executionContext());
    expect(res.status).toBe(409);
    expect(((await res.json()) as { detail: string }).detail).toContain('"orders:31"');
    await holder.release();
  });

  it("in watchdog mode, bases Retry-After on the holds it saw, not the renewed 30 s lease", async () => {
    const client = bed.client();
    const entered = gate();
    const finish = gate();
    const app = appWith(client, async () => {
      entered.open();
      await finish.opened;
      return new Response("ok");
    });
    // Before any hold ended here: 1 s, although the holder's watchdog lease is 30 s.
    const first = app.request("/orders/32", { method: "POST" }, {}, executionContext());
    await entered.opened;
    const early = await app.request("/orders/32", { method: "POST" }, {}, executionContext());
    expect(early.status).toBe(409);
    expect(early.headers.get("retry-after")).toBe("1");
    finish.open();
    expect((await first).status).toBe(200);
    // After a short hold ended: still 1 s (the hold took well under a second).
    const holder = await client.lock("orders:32").acquire();
    const later = await app.request("/orders/32", { method: "POST" }, {}, executionContext());
    expect(later.headers.get("retry-after")).toBe("1");
    await holder.release();
  });

  it("with leaseMs, bases Retry-After on the holds it saw once one ended, not on the 10 s lease", async () => {
    const client = bed.client();
    const entered = gate();
    const finish = gate();
    let calls = 0;
    const app = appWith(
      client,
      async () => {
        calls += 1;
        if (calls === 2) {
          entered.open();
          await finish.opened;
        } else await sleepMs(300);
        return new Response("ok");
      },
      { leaseMs: 10_000 },
    );
    // A 300 ms hold ends here first.
    expect(
      (await app.request("/orders/33", { method: "POST" }, {}, executionContext())).status,
    ).toBe(200);
    const second = app.request("/orders/33", { method: "POST" }, {}, executionContext());
    await entered.opened;
    const busy = await app.request("/orders/33", { method: "POST" }, {}, executionContext());
    expect(busy.status).toBe(409);
    expect(busy.headers.get("retry-after")).toBe("1");
    finish.open();
    expect((await second).status).toBe(200);
  });

  // Issue 44 item 5: a key built from the request (a path parameter) names a lock whatever its
  // text: braces are escaped (they were a 500 LockInputError), a name still invalid is a 400.
  it("locks keys from user input: braces escaped, an over-long name a 400, never a 500", async () => {
    const client = bed.client();
    const app = appWith(client, (c) => Response.json({ name: c.get("lock").name }));
    const braces = await app.request(
      "/orders/%7Bweird%7D",
      { method: "POST" },
      {},
      executionContext(),
    );
    expect(braces.status).toBe(200);
    expect(await braces.json()).toEqual({ name: "orders:%7Bweird%7D" });
    const holder = await client.lock("orders:%7Bweird%7D").acquire({ leaseMs: 5_000 });
    const busy = await app.request(
      "/orders/%7Bweird%7D",
      { method: "POST" },
      {},
      executionContext(),
    );
    expect(busy.status).toBe(409);
    await holder.release();
    const long = await app.request(
      `/orders/${"x".repeat(1_100)}`,
      { method: "POST" },
      {},
      executionContext(),
    );
    expect(long.status).toBe(400);
    expect(long.headers.get("content-type")).toBe("application/problem+json");
    expect(((await long.json()) as { detail: string }).detail).toContain("1024 UTF-8 bytes");
  });

  it("lets onBusy choose the answer", async () => {
    const client = bed.client();
    const holder = await client.lock("orders:4").acquire({ leaseMs: 10_000 });
    const app = appWith(client, () => new Response("ok"), {
      leaseMs: 10_000,
      onBusy: (c, busy) => c.json({ later: busy.retryAfterSeconds, name: busy.name }, 503),
    });
    const res = await app.request("/orders/4", { method: "POST" }, {}, executionContext());
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ later: 10, name: "orders:4" });
    await holder.release();
  });

  it("waits up to waitMs for the lock", async () => {
    const client = bed.client();
    const holder = await client.lock("orders:5").acquire({ leaseMs: 10_000 });
    setTimeout(() => void holder.release(), 150);
    const app = appWith(client, (c) => Response.json({ token: c.get("lock").fencingToken }), {
      waitMs: 5_000,
    });
    const res = await app.request("/orders/5", { method: "POST" }, {}, executionContext());
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ token: 2 });
  });

  it("never runs the handler on a hold whose lease ended before its answer arrived", async () => {
    // Issue 41: an answer slower than the lease brings back a hold another owner may have by now.
    const prefix = freshPrefix();
    const slow = slowScriptAnswers(bed.redis());
    const meter = overlapMeter();
    const handler = async () => {
      meter.enter();
      await sleepMs(600);
      meter.leave();
      return new Response("ok");
    };
    const lateApp = appWith(bed.client({ prefix, redis: slow.redis }), handler, { leaseMs: 400 });
    const promptApp = appWith(bed.client({ prefix }), handler, { leaseMs: 2_000 });
    slow.state.delayMs = 900;
    const lateAnswer = lateApp.request("/orders/7", { method: "POST" }, {}, executionContext());
    await sleepMs(200); // its script is sent by now (the delay is read when it is sent)
    slow.state.delayMs = 0;
    await sleepMs(350);
    const promptAnswer = await promptApp.request(
      "/orders/7",
      { method: "POST" },
      {},
      executionContext(),
    );
    const lateResponse = await lateAnswer;
    expect(promptAnswer.status).toBe(200);
    expect(meter.max).toBe(1);
    expect(lateResponse.status).toBe(409);
  });

  it("runs the requests of one key one at a time, and other keys alongside", async () => {
    const client = bed.client();
    const meter = overlapMeter();
    const app = appWith(
      client,
      async () => {
        meter.enter();
        await sleepMs(15);
        meter.leave();
        return new Response("ok");
      },
      { waitMs: 20_000, leaseMs: 10_000 },
    );
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        app.request("/orders/6", { method: "POST" }, {}, executionContext()),
      ),
    );
    expect(results.map((res) => res.status)).toEqual(Array(8).fill(200));
    expect(meter.max).toBe(1);

    // Another key is not blocked by a held one.
    const inside = gate();
    const release = gate();
    const blocking = appWith(client, async () => {
      inside.open();
      await release.opened;
      return new Response("first");
    });
    const first = blocking.request("/orders/7", { method: "POST" }, {}, executionContext());
    await inside.opened;
    const other = await appWith(client, () => new Response("second")).request(
      "/orders/8",
      { method: "POST" },
      {},
      executionContext(),
    );
    expect(other.status).toBe(200);
    release.open();
    expect((await first).status).toBe(200);
  });

  it("opens an owner scope: the handler's own acquisitions of the lock re-enter", async () => {
    const client = bed.client();
    const app = appWith(client, async (c) => {
      const outer = c.get("lock");
      const inner = await client.lock("orders:9").acquire({ waitMs: 0, leaseMs: 5_000 });
      const holds = await client.lock("orders:9").holdCount();
      await inner.release();
      return Response.json({ same: inner.fencingToken === outer.fencingToken, holds });
    });
    const res = await app.request("/orders/9", { method: "POST" }, {}, executionContext());
    expect(await res.json()).toEqual({ same: true, holds: 2 });
    expect(await client.lock("orders:9").isLocked()).toBe(false);
  });

  it("takes the client from a function of the request (e.g. from c.env)", async () => {
    const client = bed.client();
    const app = new Hono<{ Bindings: { LOCKS: LockClient } }>();
    const typed = middlewareFor(app);
    app.post(
      "/orders/:id",
      typed.withLock({
        client: (c) => c.env.LOCKS,
        key: (c) => `orders:${c.req.param("id")}`,
      }),
      (c) => c.text(String(c.get("lock").fencingToken)),
    );
    const res = await app.request(
      "/orders/10",
      { method: "POST" },
      { LOCKS: client },
      executionContext(),
    );
    expect(await res.text()).toBe("1");
  });

  it("sends the response and reports when the lease ran out mid-handler", async () => {
    const client = bed.client();
    const failures: MiddlewareFailure[] = [];
    const lost: string[] = [];
    client.on("lockLost", (event) => void lost.push(event.name));
    const app = appWith(
      client,
      async (c) => {
        // The handle learns first (its clock starts before the request); then the key expires.
        await until(() => c.get("lock").signal.aborted, 5_000);
        await until(async () => !(await client.lock("orders:11").isLocked()), 5_000);
        return new Response("late but done");
      },
      { leaseMs: 150, onFailure: (failure) => void failures.push(failure) },
    );
    const res = await app.request("/orders/11", { method: "POST" }, {}, executionContext());
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("late but done");
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ kind: "release", key: "orders:11" });
    expect((failures[0]!.error as Error).name).toBe("LockNotHeldError");
    expect(lost).toEqual(["orders:11"]);
  });

  it("retries a failed release in the background until the lock is free", async () => {
    const isRelease = await sentScript(RELEASE);
    let failing = false;
    const redis = failingScripts(bed.redis(), isRelease, () => failing);
    const client = new LockClient({ redis, prefix: `r${Date.now().toString(36)}` });
    const failures: MiddlewareFailure[] = [];
    const app = appWith(
      client,
      () => {
        failing = true;
        return new Response("done");
      },
      { onFailure: (failure) => void failures.push(failure) },
    );
    const ctx = executionContext();
    const res = await app.request("/orders/12", { method: "POST" }, {}, ctx);
    expect(res.status).toBe(200);
    expect(failures.map((f) => f.kind)).toEqual(["release"]);
    expect(redis.failures).toBeGreaterThanOrEqual(1);
    expect(await client.lock("orders:12").isLocked()).toBe(true);
    failing = false;
    await ctx.drain();
    expect(await client.lock("orders:12").isLocked()).toBe(false);
  });

  it("gives the hold up when every background release failed: lockLost, and the lease frees it", async () => {
    const isRelease = await sentScript(RELEASE);
    const redis = failingScripts(bed.redis(), isRelease, () => true);
    const client = new LockClient({
      redis,
      prefix: `g${Date.now().toString(36)}`,
      watchdogTimeoutMs: 1_000,
      retries: 0,
    });
    const lost: unknown[] = [];
    client.on("lockLost", (event) => void lost.push(event.cause));
    let signal: AbortSignal | undefined;
    const app = appWith(
      client,
      (c) => {
        signal = c.get("lock").signal;
        return new Response("done");
      },
      { onFailure: () => {} },
    );
    const ctx = executionContext();
    const res = await app.request("/orders/13", { method: "POST" }, {}, ctx);
    expect(res.status).toBe(200);
    await ctx.drain(); // the background retries: about 10 s
    expect(signal?.aborted).toBe(true);
    expect(lost).toHaveLength(1);
    // The watchdog no longer renews it: the lease frees the lock.
    await until(async () => !(await client.lock("orders:13").isLocked()), 5_000);
  }, 30_000);

  it("takes any lock kind: a write lock keeps readers out while the handler runs", async () => {
    const client = bed.client();
    const catalog = client.readWriteLock("catalog");
    const app = new Hono();
    app.put(
      "/catalog",
      withLock({ lock: () => catalog.writeLock(), leaseMs: 10_000 }),
      async (c) => {
        expectTypeOf(c.get("lock")).toEqualTypeOf<LockHandle>();
        const reader = await catalog.readLock().tryAcquire();
        return c.json({ readerGotIn: reader !== null, token: c.get("lock").fencingToken });
      },
    );
    const res = await app.request("/catalog", { method: "PUT" }, {}, executionContext());
    expect(await res.json()).toEqual({ readerGotIn: false, token: 1 });
    const reader = await catalog.readLock().tryAcquire({ leaseMs: 5_000 });
    expect(reader).not.toBeNull();

    // While a reader holds it, the writer's request gets the busy answer, named after the lock.
    const busy = await app.request("/catalog", { method: "PUT" }, {}, executionContext());
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ title: "Locked" });
    await reader?.release();
  });

  it("takes a multi-lock and a fair lock, typing c.get('lock') as the handle they return", async () => {
    const client = bed.client();
    const app = new Hono();
    app.post(
      "/transfer/:from/:to",
      withLock({
        lock: (c) =>
          client.multiLock([
            client.lock(`account:${c.req.param("from")}`),
            client.lock(`account:${c.req.param("to")}`),
          ]),
        leaseMs: 10_000,
      }),
      async (c) => {
        const held = c.get("lock");
        expectTypeOf(held).toEqualTypeOf<MultiLockHandle>();
        const locked = await Promise.all(
          held.members.map((member) => client.lock(member.name).isLocked()),
        );
        return c.json({ locked, tokens: held.fencingTokens });
      },
    );
    app.post(
      "/payouts/:account",
      withLock({ lock: (c) => client.fairLock(`payouts:${c.req.param("account")}`), client }),
      async (c) => c.json({ holds: await client.fairLock("payouts:a1").holdCount() }),
    );
    const res = await app.request("/transfer/a/b", { method: "POST" }, {}, executionContext());
    expect(await res.json()).toEqual({ locked: [true, true], tokens: [1, 1] });
    expect(await client.lock("account:a").isLocked()).toBe(false);
    expect(await client.lock("account:b").isLocked()).toBe(false);
    const fair = await app.request("/payouts/a1", { method: "POST" }, {}, executionContext());
    expect(await fair.json()).toEqual({ holds: 1 });
    expect(await client.fairLock("payouts:a1").isLocked()).toBe(false);
  });
});

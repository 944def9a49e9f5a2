/**
 * concurrencyLimit(): at most `permits` requests at once per key, 429 with an honest
 * Retry-After beyond, the permit returned on every path (a thrown handler, a streamed body read
 * to its end or cancelled, a HEAD request, a body nobody reads).
 */
import { Hono } from "hono";
import { describe, expect, expectTypeOf, it } from "vitest";
import { type ConcurrencyLimitOptions, concurrencyLimit } from "../../../src/hono/index.js";
import { LockInputError, type PermitHandle } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import {
  freshPrefix,
  sleepMs,
  slowScriptAnswers,
  until,
  useTestBed,
} from "../exclusive/testbed.js";
import { executionContext, gate, overlapMeter } from "./harness.js";

describe.each(backendKindsUnderTest())("concurrencyLimit() on %s", (kind) => {
  const bed = useTestBed(kind);

  function appWith(
    options: Omit<ConcurrencyLimitOptions, "key" | "name">,
    handler: (c: { get(key: "permit"): PermitHandle }) => Promise<Response> | Response,
  ) {
    const app = new Hono();
    app.onError((_error, c) => c.text("handler failed", 500));
    app.post(
      "/tenants/:id/summaries",
      concurrencyLimit({ key: (c) => `llm:${c.req.param("id")}`, ...options }),
      (c) => handler(c),
    );
    return app;
  }
  const post = (app: Hono, tenant = "acme") =>
    app.request(`/tenants/${tenant}/summaries`, { method: "POST" }, {}, executionContext());

  it("runs at most `permits` requests per key and answers 429 with Retry-After beyond", async () => {
    const client = bed.client();
    const finish = gate();
    const meter = overlapMeter();
    const app = appWith({ client, permits: 3, leaseMs: 4_500 }, async (c) => {
      expectTypeOf(c.get("permit")).toEqualTypeOf<PermitHandle>();
      meter.enter();
      await finish.opened;
      meter.leave();
      return new Response("ok");
    });
    const running = [post(app), post(app), post(app)];
    const semaphore = client.semaphore("llm:acme");
    // Holds, not "0 available": that is also what a key shows before its capacity is set.
    await until(async () => (await semaphore.state()).holds === 3);
    const refused = await post(app);
    expect(refused.status).toBe(429);
    // The soonest lease ends within 4.5 s: a permit is surely free by then.
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(await refused.json()).toMatchObject({ status: 429, title: "Too Many Requests" });
    // Another key has its own limit.
    const other = post(app, "globex");
    finish.open();
    const answers = await Promise.all([...running, other]);
    expect(answers.map((res) => res.status)).toEqual([200, 200, 200, 200]);
    await Promise.all(answers.map((res) => res.text()));
    expect(meter.max).toBe(3);
    await until(async () => (await semaphore.availablePermits()) === 3);
    await until(async () => (await client.semaphore("llm:globex").availablePermits()) === 3);
  });

  it("waits up to waitMs for a permit", async () => {
    const client = bed.client();
    const app = appWith({ client, permits: 1, waitMs: 5_000 }, async () => {
      await sleepMs(100);
      return new Response("ok");
    });
    // Each caller reads its answer: the permit returns when the body has been sent.
    const served = async () => {
      const res = await post(app);
      return `${res.status} ${await res.text()}`;
    };
    expect(await Promise.all([served(), served()])).toEqual(["200 ok", "200 ok"]);
    await until(async () => (await client.semaphore("llm:acme").availablePermits()) === 1);
  });

  it("limits keys from user input: braces escaped, an over-long name a 400, never a 500", async () => {
    const client = bed.client();
    const app = appWith({ client, permits: 1 }, (c) =>
      Response.json({ name: c.get("permit").name }),
    );
    const braces = await post(app, "%7Bweird%7D");
    expect(braces.status).toBe(200);
    expect(await braces.json()).toEqual({ name: "llm:%7Bweird%7D" });
    const long = await post(app, "x".repeat(1_100));
    expect(long.status).toBe(400);
    expect(((await long.json()) as { detail: string }).detail).toContain("1024 UTF-8 bytes");
  });

  it.each([
    // Issue 41 (the long chaos run): a permit answered slower than its lease had lapsed in
    // Redis, another request took it, and the late one's handler still started beside it.
    { mode: "lease", client: {}, limit: { leaseMs: 400 } },
    // The middleware's default: nothing checked an answer slower than the watchdog timeout (the
    // first lease); a fourth handler started beside three permits.
    { mode: "watchdog", client: { watchdogTimeoutMs: 400 }, limit: {} },
  ])(
    "never runs a handler on a permit whose first lease ended before its answer arrived ($mode mode)",
    async (setting) => {
      const prefix = freshPrefix();
      const slow = slowScriptAnswers(bed.redis());
      const late = bed.client({ prefix, redis: slow.redis, ...setting.client });
      const prompt = bed.client({ prefix });
      const meter = overlapMeter();
      const handler = async () => {
        meter.enter();
        await sleepMs(600);
        meter.leave();
        return new Response("ok");
      };
      const lateApp = appWith({ client: late, permits: 1, ...setting.limit }, handler);
      const promptApp = appWith({ client: prompt, permits: 1, leaseMs: 2_000 }, handler);
      slow.state.delayMs = 900; // the acquire's answer comes back 900 ms late, its 400 ms lease over
      const lateAnswer = post(lateApp);
      await sleepMs(200); // its script is sent by now (the delay is read when it is sent)
      slow.state.delayMs = 0;
      await sleepMs(350); // the late permit has lapsed in Redis: the prompt request takes it
      const promptAnswer = await post(promptApp);
      const lateResponse = await lateAnswer;
      expect(promptAnswer.status).toBe(200);
      expect(meter.max).toBe(1);
      // The late request found the permit taken when it asked again: busy, not served beside it.
      expect(lateResponse.status).toBe(429);
      await Promise.all([promptAnswer.text(), lateResponse.text()]);
      const semaphore = prompt.semaphore("llm:acme");
      await until(async () => (await semaphore.availablePermits()) === 1);
    },
  );

  it("returns the permit when the handler throws", async () => {
    const client = bed.client();
    const app = appWith({ client, permits: 1 }, () => {
      throw new Error("upstream failed");
    });
    expect((await post(app)).status).toBe(500);
    expect(await client.semaphore("llm:acme").availablePermits()).toBe(1);
    expect((await post(app)).status).toBe(500);
  });

  it("holds the permit while a streamed body is sent, and returns it at its end", async () => {
    const client = bed.client();
    const chunks = gate();
    const app = appWith({ client, permits: 1 }, () => {
      const encoder = new TextEncoder();
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(encoder.encode("first "));
          await chunks.opened;
          controller.enqueue(encoder.encode("last"));
          controller.close();
        },
      });
      return new Response(body, { headers: { "content-type": "text/plain" } });
    });
    const semaphore = client.semaphore("llm:acme");
    const streaming = await post(app);
    expect(streaming.status).toBe(200);
    expect(streaming.headers.get("content-type")).toBe("text/plain");
    const text = streaming.text();
    await sleepMs(100);
    // The handler has returned, but its answer is still streaming: the permit is held.
    expect(await semaphore.availablePermits()).toBe(0);
    expect((await post(app)).status).toBe(429);
    chunks.open();
    expect(await text).toBe("first last");
    await until(async () => (await semaphore.availablePermits()) === 1);
  });

  it("returns the permit when the client cancels a streamed body", async () => {
    const client = bed.client();
    const app = appWith({ client, permits: 1 }, () => {
      const body = new ReadableStream<Uint8Array>({
        pull: () => sleepMs(50),
      });
      return new Response(body);
    });
    const semaphore = client.semaphore("llm:acme");
    const streaming = await post(app);
    expect(await semaphore.availablePermits()).toBe(0);
    await streaming.body?.cancel();
    await until(async () => (await semaphore.availablePermits()) === 1);
  });

  it("returns a HEAD request's permit at once: Hono drops the GET route's body, never read", async () => {
    const client = bed.client();
    const app = new Hono();
    // Watchdog mode (no leaseMs): a permit kept is renewed for as long as the process lives.
    app.get("/report", concurrencyLimit({ client, name: "report", permits: 2 }), (c) =>
      c.text("the report"),
    );
    const call = (method: string) => app.request("/report", { method }, {}, executionContext());
    const semaphore = client.semaphore("report");
    const heads = await Promise.all([call("HEAD"), call("HEAD")]);
    expect(heads.map((res) => [res.status, res.body])).toEqual([
      [200, null],
      [200, null],
    ]);
    expect(await semaphore.state()).toMatchObject({ available: 2, holds: 0 });
    const get = await call("GET");
    expect(get.status).toBe(200);
    expect(await get.text()).toBe("the report");
    await until(async () => (await semaphore.availablePermits()) === 2);
  });

  it("returns the permit of a body nobody reads after unreadBodyMs; a reader waiting for a slow chunk keeps it", async () => {
    const client = bed.client();
    const chunks = gate();
    const app = appWith({ client, permits: 1, unreadBodyMs: 300 }, () => {
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          await chunks.opened;
          controller.enqueue(new TextEncoder().encode("late"));
          controller.close();
        },
      });
      return new Response(body);
    });
    const semaphore = client.semaphore("llm:acme");
    // Read: a chunk the handler has not produced yet is no reason to return the permit.
    const read = await post(app);
    const text = read.text();
    await sleepMs(900);
    expect(await semaphore.availablePermits()).toBe(0);
    chunks.open();
    expect(await text).toBe("late");
    await until(async () => (await semaphore.availablePermits()) === 1);
    // Never asked for (discarded by a runtime or a middleware): returned after 300 ms.
    const unread = await post(app);
    expect(await semaphore.availablePermits()).toBe(0);
    const heldAt = Date.now();
    await until(async () => (await semaphore.availablePermits()) === 1);
    expect(Date.now() - heldAt).toBeLessThan(3_000);
    // Still whole if read after all.
    expect(await unread.text()).toBe("late");
  });

  it("in watchdog mode, bases Retry-After on the requests it saw, not the renewed lease", async () => {
    const client = bed.client();
    const finish = gate();
    const app = appWith({ client, permits: 1 }, async () => {
      await finish.opened;
      return new Response("ok");
    });
    const first = post(app);
    await until(async () => (await client.semaphore("llm:acme").state()).holds === 1);
    const refused = await post(app);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    finish.open();
    await (await first).text();
    await until(async () => (await client.semaphore("llm:acme").availablePermits()) === 1);
  });

  it("rejects bad options when built", () => {
    const client = bed.client();
    const key = () => "k";
    expect(() => concurrencyLimit({ client, key, permits: 0 })).toThrow(LockInputError);
    expect(() => concurrencyLimit({ client, permits: 1 })).toThrow(LockInputError);
    expect(() => concurrencyLimit({ client, key, name: "k", permits: 1 })).toThrow(LockInputError);
    expect(() => concurrencyLimit({ client: {} as never, key, permits: 1 })).toThrow(
      LockInputError,
    );
    expect(() => concurrencyLimit({ client, key, permits: 1, waitMs: -1 })).toThrow(LockInputError);
    expect(() => concurrencyLimit({ client, key, permits: 1, unreadBodyMs: 0 })).toThrow(
      LockInputError,
    );
  });
});

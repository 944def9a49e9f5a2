/**
 * The inspector's Hono handler mounted in an app inside workerd, through
 * @upstash/redis/cloudflare, against the local server: behind the app's own auth, the page, the
 * snapshot of a held lock, a semaphore's hold and a latch, a force-release, and "read" access
 * refusing it; the recent waits of a recorder given to it.
 */
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Redis } from "@upstash/redis/cloudflare";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { LockClient } from "../../src/index.js";
import { inspector, recordRecentWaits } from "../../src/inspector/index.js";
import type { InspectedWaits, InspectorSnapshot } from "../../src/inspector/types.js";

const servers: { kind: string; url: string; token: string }[] = JSON.parse(
  env.EDGELOCK_TEST_SERVERS,
);
let prefixes = 0;
const freshPrefix = () => `in${Date.now().toString(36)}${++prefixes}`;

describe.each(servers)("the inspector's Hono handler in workerd on $kind", (server) => {
  it("serves the page and the snapshot behind the app's auth, and force-releases with write access", async () => {
    const client = new LockClient({
      redis: new Redis({ url: server.url, token: server.token }),
      prefix: freshPrefix(),
    });
    const held = await client.lock("orders:42").acquire({ leaseMs: 10_000 });
    const permit = await client
      .semaphore("exports", { initialPermits: 3 })
      .acquire({ permits: 2, leaseMs: 10_000 });
    await client.countDownLatch("import").trySetCount(2);
    const app = new Hono();
    // The app's own auth: a header here; the inspector decides read or write from it.
    app.use("/_edgelock/*", async (c, next) => {
      if (c.req.header("x-user") === undefined) return c.text("who are you?", 401);
      await next();
    });
    app.all(
      "/_edgelock/*",
      inspector({ client, auth: (c) => (c.req.header("x-user") === "admin" ? "write" : "read") }),
    );
    const call = (path: string, user?: string, init: RequestInit = {}) =>
      app.request(
        path,
        { ...init, headers: { ...(user ? { "x-user": user } : {}), ...(init.headers ?? {}) } },
        env,
        createExecutionContext(),
      );

    expect((await call("/_edgelock/")).status).toBe(401);
    const page = await call("/_edgelock/", "viewer");
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("edgelock inspector");
    expect((await call("/_edgelock", "viewer")).status).toBe(308);

    const snapshot = (await (
      await call("/_edgelock/api/snapshot", "viewer")
    ).json()) as InspectorSnapshot;
    expect(snapshot.canWrite).toBe(false);
    expect(snapshot.locks.find((lock) => lock.name === "orders:42")).toMatchObject({
      state: "held",
      fencingToken: held.fencingToken,
    });
    expect(snapshot.semaphores).toMatchObject([
      {
        name: "exports",
        capacity: 3,
        available: 1,
        holds: [{ permits: 2, fencingToken: permit.fencingToken }],
      },
    ]);
    expect(snapshot.semaphores[0]?.holds[0]?.owner).toMatch(/^[0-9a-f]{12}$/);
    expect(snapshot.latches).toMatchObject([{ name: "import", count: 2 }]);
    expect(JSON.stringify(snapshot)).not.toContain(held.owner);
    expect(JSON.stringify(snapshot)).not.toContain(permit.owner);

    const action = (user: string) =>
      call("/_edgelock/api/force-release", user, {
        method: "POST",
        headers: { "content-type": "application/json", "x-edgelock-inspector": "1" },
        body: JSON.stringify({ name: "orders:42", kind: "lock" }),
      });
    expect((await action("viewer")).status).toBe(403);
    expect(await client.lock("orders:42").isLocked()).toBe(true);
    const done = await action("admin");
    expect(await done.json()).toMatchObject({ done: true });
    expect(await client.lock("orders:42").isLocked()).toBe(false);
    await permit.release();
  });

  it("answers the recent waits of the recorder it is given (api/waits)", async () => {
    const prefix = freshPrefix();
    const clientOf = () =>
      new LockClient({
        redis: new Redis({ url: server.url, token: server.token }),
        prefix,
        wait: { mode: "poll" },
      });
    const holder = clientOf();
    const waiter = clientOf();
    using recentWaits = recordRecentWaits(waiter);
    const held = await holder.lock("orders:7").acquire({ leaseMs: 300 });
    const mine = await waiter.lock("orders:7").acquire({ leaseMs: 5_000, waitMs: 5_000 });
    await mine.release();
    const app = new Hono();
    app.all("/_edgelock/*", inspector({ client: waiter, auth: () => "read", recentWaits }));
    const response = await app.request("/_edgelock/api/waits", {}, env, createExecutionContext());
    const text = await response.text();
    const body = JSON.parse(text) as InspectedWaits;
    expect(body).toMatchObject({
      recording: true,
      waits: [{ name: "orders:7", outcome: "acquired" }],
    });
    // guard: narrows the union; the line above asserts recording is true.
    if (!body.recording) throw new Error("not recording");
    const [wait] = body.waits;
    expect(wait?.steps.map((step) => step.attempt)).toEqual(
      Array.from({ length: wait?.requests ?? 0 }, (_, i) => i + 1),
    );
    expect(wait?.steps[0]).toMatchObject({ answer: "busy" });
    expect(text).not.toContain(held.owner);
    expect(text).not.toContain(mine.owner);
  });
});

/**
 * The semaphore, the count-down latch and Hono's concurrencyLimit() inside workerd, through
 * @upstash/redis/cloudflare, against the local server (real Redis when installed, and the
 * embedded engine).
 */

import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { concurrencyLimit } from "../../src/hono/index.js";
import { SemaphoreNotInitializedError } from "../../src/index.js";
import { clientOn, TEST_SERVERS, type TestServer } from "./clients.js";

const servers = TEST_SERVERS;
const clientFor = (server: TestServer, prefix?: string) => clientOn(server, "sem", prefix);

describe.each(servers)("semaphore in workerd on $kind", (server) => {
  it("admits at most its capacity and serves a waiter when a permit returns", async () => {
    const holderClient = clientFor(server);
    const semaphore = holderClient.semaphore("upstream");
    await expect(semaphore.acquire()).rejects.toBeInstanceOf(SemaphoreNotInitializedError);
    expect(await semaphore.trySetPermits(2)).toBe(true);
    const both = await semaphore.acquire({ permits: 2, leaseMs: 10_000 });
    const waiter = clientFor(server, holderClient.prefix)
      .semaphore("upstream")
      .acquire({ waitMs: 5_000, leaseMs: 5_000 });
    expect(await semaphore.tryAcquire()).toBeNull();
    await both.release();
    const served = await waiter;
    expect(served.permits).toBe(1);
    expect(served.fencingToken).toBeGreaterThan(both.fencingToken);
    await served.release();
    expect(await semaphore.availablePermits()).toBe(2);
  });

  it("counts a latch down to open", async () => {
    const client = clientFor(server);
    const latch = client.countDownLatch("chunks");
    expect(await latch.trySetCount(2)).toBe(true);
    const opened = latch.await({ waitMs: 5_000 });
    await latch.countDown();
    await clientFor(server, client.prefix).countDownLatch("chunks").countDown();
    expect(await opened).toBe(true);
  });

  it("limits concurrent requests with concurrencyLimit()", async () => {
    const client = clientFor(server);
    let release!: () => void;
    const finish = new Promise<void>((resolve) => {
      release = resolve;
    });
    const app = new Hono();
    app.get(
      "/",
      concurrencyLimit({ client, name: "route", permits: 1, leaseMs: 5_000 }),
      async () => {
        await finish;
        return new Response("ok");
      },
    );
    const first = app.request("/");
    const semaphore = client.semaphore("route");
    while ((await semaphore.availablePermits()) > 0) await new Promise((r) => setTimeout(r, 10));
    const refused = await app.request("/");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    release();
    expect(await (await first).text()).toBe("ok");
    while ((await semaphore.availablePermits()) < 1) await new Promise((r) => setTimeout(r, 10));
  });
});

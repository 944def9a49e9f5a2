/**
 * The semaphore, the count-down latch and Hono's concurrencyLimit() inside workerd, through
 * @upstash/redis/cloudflare, against the local server (real Redis when installed, and the
 * embedded engine).
 */

import { Redis } from "@upstash/redis/cloudflare";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { concurrencyLimit } from "../../src/hono/index.js";
import { LockClient, type RedisLike, SemaphoreNotInitializedError } from "../../src/index.js";
import { clientOn, sleepMs, TEST_SERVERS, type TestServer } from "./clients.js";

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

  it("in push mode a latch's await is told over the latch's channel", async () => {
    const client = clientFor(server);
    await client.countDownLatch("told").trySetCount(1);
    const redis = new Redis({ url: server.url, token: server.token });
    let reads = 0;
    const counted: RedisLike = {
      eval: (script, keys, args) => {
        reads += 1;
        return redis.eval(script, keys, args);
      },
      evalsha: (sha, keys, args) => {
        reads += 1;
        return redis.evalsha(sha, keys, args);
      },
      subscribe: (channel) => redis.subscribe(channel),
    };
    const listening = new LockClient({
      redis: counted,
      prefix: client.prefix,
      wait: { mode: "push", parkMs: 60_000 },
    });
    const opened = listening.countDownLatch("told").await({ waitMs: 30_000 });
    await sleepMs(1_500);
    // Listening, not polling: a read before the stream, one or two while it opened, then none.
    expect(reads).toBeLessThanOrEqual(4);
    const countedAt = Date.now();
    await client.countDownLatch("told").countDown();
    expect(await opened).toBe(true);
    expect(Date.now() - countedAt).toBeLessThan(2_000);
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

/**
 * Issue 30 item 2: on Upstash, every edgelock script runs with `allow-key-locking` and touches
 * only the keys it declares, so no lock operation takes Upstash's database-wide script lock. The
 * local server's `upstash` profile enforces the declared-keys rule with Upstash's error and counts
 * every script run without the flag; this drives every lock kind through it and reads the counts.
 */
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { lockKeys } from "../../../src/hold/script.js";
import { idempotency } from "../../../src/hono/index.js";
import {
  type LockClient,
  LockInputError,
  LockWaitTimeoutError,
  RedLock,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("scripts under per-key locking on %s", (backend) => {
  const bed = useTestBed(backend, { profile: "upstash" });
  const scripts = () => bed.server.stats.snapshot().scripts;

  /** Contended acquisitions of one lock by several clients: queueing, waiting, releases. */
  async function contend(
    make: (c: LockClient) => { acquire(o: object): Promise<{ release(): Promise<void> }> },
    prefix: string,
    wait?: { mode: "push" },
  ) {
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        const client = bed.client({ prefix, scriptKeyLocking: true, ...(wait ? { wait } : {}) });
        for (let i = 0; i < 3; i++) {
          const held = await make(client).acquire({ leaseMs: 5_000, waitMs: 20_000 });
          await sleepMs(3);
          await held.release();
        }
      }),
    );
  }

  it("every kind, waiting and push mode included: no global-lock script, no undeclared key", async () => {
    const before = scripts();
    const prefix = freshPrefix();
    const client = bed.client({ prefix, scriptKeyLocking: true });
    await contend((c) => c.lock("plain"), prefix);
    await contend((c) => c.lock("pushed"), prefix, { mode: "push" });
    await contend((c) => c.fairLock("fair"), prefix);
    await contend((c) => c.readWriteLock("rw").writeLock(), prefix);
    await contend((c) => c.readWriteLock("rw").readLock(), prefix);
    await contend((c) => c.multiLock([c.lock("m1"), c.lock("m2")]), prefix);
    // Watchdog mode (renewals), extend, inspection, force release, give-ups.
    const watched = await client.lock("watched").acquire();
    await watched.extend(5_000);
    expect(await client.lock("watched").isLocked()).toBe(true);
    await client.lock("watched").forceRelease();
    const busy = await client.fairLock("busy").acquire({ leaseMs: 5_000 });
    await expect(client.fairLock("busy").acquire({ leaseMs: 5_000, waitMs: 200 })).rejects.toThrow(
      LockWaitTimeoutError,
    );
    await expect(
      client.readWriteLock("busy-rw").readLock().acquire({ leaseMs: 5_000, waitMs: 0 }),
    ).resolves.toBeDefined();
    await busy.release();
    // A semaphore waited on, and a latch awaited in push mode (its countDown publishes on the
    // latch's channel, which it declares).
    const semaphore = client.semaphore("sem", { initialPermits: 1 });
    const permit = await semaphore.acquire({ leaseMs: 5_000 });
    const queued = bed.client({ prefix, scriptKeyLocking: true }).semaphore("sem").acquire({
      leaseMs: 5_000,
      waitMs: 10_000,
    });
    await sleepMs(50);
    await permit.release();
    await (await queued).release();
    const latch = client.countDownLatch("latch");
    await latch.trySetCount(1);
    const awaited = bed
      .client({ prefix, scriptKeyLocking: true, wait: { mode: "push" } })
      .countDownLatch("latch")
      .await({ waitMs: 10_000 });
    await sleepMs(300);
    await latch.countDown();
    expect(await awaited).toBe(true);
    const quorum = new RedLock(
      [0, 1, 2].map(() => bed.client({ prefix: freshPrefix(), scriptKeyLocking: true })),
    );
    await (await quorum.lock("q").acquire({ leaseMs: 5_000 })).release();
    // The Hono middleware's own scripts, through the same Redis client.
    const app = new Hono();
    app.post("/pay", idempotency({ client }), (c) => c.text("paid", 201));
    const pay = () => app.request("/pay", { method: "POST", headers: { "idempotency-key": "k1" } });
    expect((await pay()).status).toBe(201);
    expect((await pay()).status).toBe(201);

    const after = scripts();
    expect(after.dynamicKeyRejections - before.dynamicKeyRejections).toBe(0);
    expect(after.globalLock - before.globalLock).toBe(0);
    expect(after.keyLocking - before.keyLocking).toBeGreaterThan(100);
  });

  it("a flagged release that finds a parked waiter (parked through a client without the flag) builds no key", async () => {
    // Upstash serves no blocking pops, so no flagged client parks; a waiter of a client whose
    // flag is off may still have registered as parked (before it found its pops answer at once).
    // The hand-off to it names keys after that waiter, which a flagged script cannot declare:
    // the flagged release leaves it to the waiter's own next attempt.
    const before = scripts();
    const prefix = freshPrefix();
    const keys = lockKeys(prefix, "mixed");
    const holder = await bed
      .client({ prefix, scriptKeyLocking: true })
      .lock("mixed")
      .acquire({ leaseMs: 10_000 });
    const redis = bed.redis();
    const waiter = "other-owner op-1";
    const now = Number((await redis.time())[0]) * 1000;
    await redis.zadd(keys.queue, { score: now, member: waiter });
    await redis.zadd(keys.timeouts, { score: now + 10_000, member: waiter });
    await redis.hset(keys.parked, { [waiter]: `2000 5000 op-1 ${now} ${now + 10_000}` });

    await holder.release();

    const after = scripts();
    expect(after.dynamicKeyRejections - before.dynamicKeyRejections).toBe(0);
    expect(after.globalLock - before.globalLock).toBe(0);
    expect(await redis.exists(keys.lock)).toBe(0);
    expect(await redis.zscore(keys.queue, waiter)).toBe(now);
    expect(await redis.keys(`${keys.lock}:wake:*`)).toEqual([]);
  });

  it("without the flag, every script takes the global lock (what the count measures)", async () => {
    const before = scripts();
    const client = bed.client({ scriptKeyLocking: false });
    await (await client.lock("plain").acquire({ leaseMs: 1_000 })).release();
    expect(scripts().globalLock - before.globalLock).toBe(2);
  });

  it("the option is validated before any request", () => {
    expect(() => bed.client({ scriptKeyLocking: "yes" as never })).toThrow(LockInputError);
  });
});

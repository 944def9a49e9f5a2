/**
 * The fair lock and the read-write lock inside workerd, through @upstash/redis/cloudflare,
 * against the local server (real Redis when installed, and the embedded engine).
 */

import { Redis } from "@upstash/redis/cloudflare";
import { describe, expect, it } from "vitest";
import { LockUpgradeError, LockWaitTimeoutError } from "../../src/index.js";
import { clientOn, TEST_SERVERS, type TestServer, until } from "./clients.js";

const servers = TEST_SERVERS;
const clientFor = (server: TestServer, prefix?: string) => clientOn(server, "fr", prefix);

describe.each(servers)("fair lock in workerd on $kind", (server) => {
  it("serves waiters in the order they queued", async () => {
    const holderClient = clientFor(server);
    const lock = holderClient.fairLock("fifo");
    const holder = await lock.acquire({ leaseMs: 10_000 });
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 4; i++) {
      const client = clientFor(server, holderClient.prefix);
      waiters.push(
        client
          .fairLock("fifo")
          .acquire({ leaseMs: 10_000, waitMs: 10_000 })
          .then(async (held) => {
            order.push(i);
            await held.release();
          }),
      );
      await until(async () => (await lock.queueLength()) === i + 1);
    }
    expect(await lock.tryAcquire()).toBeNull();
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3]);
    expect(await lock.queueLength()).toBe(0);
  });

  it("leaves the queue when the wait runs out", async () => {
    const lock = clientFor(server).fairLock("give-up");
    const holder = await lock.acquire({ leaseMs: 10_000 });
    await expect(lock.acquire({ waitMs: 200 })).rejects.toBeInstanceOf(LockWaitTimeoutError);
    expect(await lock.queueLength()).toBe(0);
    await holder.release();
  });
});

describe.each(servers)("read-write lock in workerd on $kind", (server) => {
  it("shares reads, excludes writes, downgrades, and refuses upgrades", async () => {
    const rw = clientFor(server).readWriteLock("catalog");
    const [a, b] = await Promise.all([
      rw.readLock().acquire({ leaseMs: 10_000 }),
      rw.readLock().acquire({ leaseMs: 10_000 }),
    ]);
    expect(await rw.readLock().holdCount()).toBe(2);
    expect(await rw.writeLock().tryAcquire({ leaseMs: 10_000 })).toBeNull();
    await expect(rw.writeLock().acquire({ owner: a!.owner, waitMs: 5_000 })).rejects.toBeInstanceOf(
      LockUpgradeError,
    );
    await a!.release();
    await b!.release();

    const write = await rw.writeLock().acquire({ leaseMs: 10_000 });
    expect(await rw.readLock().tryAcquire({ leaseMs: 10_000 })).toBeNull();
    const read = await rw.readLock().acquire({ leaseMs: 10_000, owner: write.owner, waitMs: 0 });
    expect(read.fencingToken).toBe(write.fencingToken);
    await write.release();
    const other = await rw.readLock().tryAcquire({ leaseMs: 10_000 });
    expect(other).not.toBeNull();
    await other?.release();
    await read.release();
    expect(await rw.readLock().isLocked()).toBe(false);
  });

  it("lets a waiting writer in ahead of new readers", async () => {
    const client = clientFor(server);
    const rw = client.readWriteLock("preference");
    const read = await rw.readLock().acquire({ leaseMs: 10_000 });
    const writer = rw.writeLock().acquire({ leaseMs: 10_000, waitMs: 10_000 });
    const redis = new Redis({ url: server.url, token: server.token });
    await until(async () => (await redis.zcard(`${client.prefix}:{preference}:writers`)) === 1);
    expect(await rw.readLock().tryAcquire({ leaseMs: 10_000 })).toBeNull();
    await read.release();
    const written = await writer;
    await written.release();
    const next = await rw.readLock().tryAcquire({ leaseMs: 10_000 });
    expect(next).not.toBeNull();
    await next?.release();
  });
});

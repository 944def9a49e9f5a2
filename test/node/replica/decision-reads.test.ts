/**
 * Upstash global databases answer reads from the nearest read region, which applies the
 * primary's writes late. The local server's replica mode does the same with a 500 ms lag, and
 * every read edgelock decides on is asked by a client that did not write (no sync token): each
 * must see the write at once, because each runs in an EVAL/EVALSHA, which the primary answers.
 * The first test shows that the lag is real for what a replica serves (the inspector's EVAL_RO
 * reads), so the others could fail. The list of reads: docs/upstash.md, "Global databases".
 */
import { describe, expect, it } from "vitest";
import { inspectorHandler } from "../../../src/inspector/index.js";
import type { InspectorSnapshot } from "../../../src/inspector/types.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, useTestBed } from "../exclusive/testbed.js";

const LAG_MS = 500;

async function snapshotOf(
  handler: (request: Request) => Promise<Response>,
): Promise<InspectorSnapshot> {
  const response = await handler(new Request("http://inspector.test/_edgelock/api/snapshot"));
  expect(response.status).toBe(200);
  return (await response.json()) as InspectorSnapshot;
}

describe.each(backendKindsUnderTest())(
  "replica mode, %s: decision reads after another client's write",
  (kind) => {
    const bed = useTestBed(kind, { replica: { lagMs: LAG_MS } });

    it("a replica serves plain reads and EVAL_RO late: the inspector sees a lock just taken as free", async () => {
      expect(bed.server.replicaLagMs).toBe(LAG_MS);
      const prefix = freshPrefix();
      const writer = bed.redis();
      await writer.set(`${prefix}:plain`, "written");
      expect(await bed.redis().get(`${prefix}:plain`)).toBeNull();
      expect(await writer.get(`${prefix}:plain`)).toBe("written");

      const holder = bed.client({ prefix });
      await holder.lock("shown").acquire({ leaseMs: 30_000 });
      const viewer = inspectorHandler({
        client: bed.client({ prefix }),
        access: () => "read",
        names: ["shown"],
        globalDatabase: true,
      });
      const stale = await snapshotOf(viewer);
      expect(stale.locks.find((lock) => lock.name === "shown")?.holders ?? []).toHaveLength(0);
      // Which the page says, when told the database is global.
      expect(stale.lagNote).toMatch(/nearest region of a global database/);
      const untold = inspectorHandler({ client: bed.client({ prefix }), access: () => "read" });
      expect((await snapshotOf(untold)).lagNote).toBeNull();
    });

    it("a lock just taken is locked, has a lease left, and is not free to another client", async () => {
      const prefix = freshPrefix();
      const taken = await bed.client({ prefix }).lock("job").acquire({ leaseMs: 30_000 });
      const other = bed.client({ prefix }).lock("job");
      expect(await other.isLocked()).toBe(true);
      expect(await other.remainingTtlMs()).toBeGreaterThan(20_000);
      expect(await other.holdCount()).toBe(1);
      expect(await other.tryAcquire({ leaseMs: 30_000 })).toBeNull();
      await taken.release();
    });

    it("a fair lock and a write lock just taken are locked to another client", async () => {
      const prefix = freshPrefix();
      const holder = bed.client({ prefix });
      await holder.fairLock("fair").acquire({ leaseMs: 30_000 });
      await holder.readWriteLock("rw").writeLock().acquire({ leaseMs: 30_000 });
      const other = bed.client({ prefix });
      expect(await other.fairLock("fair").isLocked()).toBe(true);
      expect(await other.readWriteLock("rw").writeLock().isLocked()).toBe(true);
      expect(await other.readWriteLock("rw").readLock().tryAcquire({ leaseMs: 30_000 })).toBeNull();
    });

    it("permits just taken are not shown free", async () => {
      const prefix = freshPrefix();
      await bed
        .client({ prefix })
        .semaphore("pool", { initialPermits: 3 })
        .acquire({ permits: 2, leaseMs: 30_000 });
      const other = bed.client({ prefix }).semaphore("pool");
      expect(await other.availablePermits()).toBe(1);
      expect(await other.state()).toMatchObject({ capacity: 3, held: 2, holds: 1, available: 1 });
      expect(await other.tryAcquire({ permits: 2, leaseMs: 30_000 })).toBeNull();
    });

    it("a latch counted down is seen counted down", async () => {
      const prefix = freshPrefix();
      const latch = bed.client({ prefix }).countDownLatch("ready");
      expect(await latch.trySetCount(2)).toBe(true);
      await latch.countDown();
      expect(await bed.client({ prefix }).countDownLatch("ready").count()).toBe(1);
    });

    it("an acquisition whose answer was lost is replayed, not counted twice", async () => {
      const prefix = freshPrefix();
      bed.server.faults.configure({
        dropAfterExecute: 1,
        maxFaults: 1,
        commands: ["eval", "evalsha"],
      });
      try {
        await bed
          .client({ prefix, retries: 3, backendTimeoutMs: 10_000 })
          .semaphore("replayed", { initialPermits: 4 })
          .acquire({ permits: 2, leaseMs: 30_000 });
        expect(bed.server.faults.counts().dropAfterExecute).toBe(1);
      } finally {
        bed.server.faults.disable();
      }
      const other = bed.client({ prefix }).semaphore("replayed");
      expect(await other.state()).toMatchObject({ capacity: 4, held: 2, holds: 1, available: 2 });
    });

    it("a waiter is not misled: it gets the lock only once the holder has released it", async () => {
      const prefix = freshPrefix();
      const held = await bed.client({ prefix }).lock("turn").acquire({ leaseMs: 30_000 });
      const waiter = bed.client({ prefix }).lock("turn");
      expect(await waiter.tryAcquire({ leaseMs: 30_000, waitMs: 300 })).toBeNull();
      let released = false;
      const waiting = waiter.acquire({ leaseMs: 30_000, waitMs: 10_000 }).then((handle) => {
        expect(released).toBe(true);
        return handle;
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      released = true;
      await held.release();
      const next = await waiting;
      expect(await bed.client({ prefix }).lock("turn").isLocked()).toBe(true);
      await next.release();
    });
  },
);

/**
 * Exactly-once under responses lost after execution (@upstash/redis and edgelock re-send): read
 * and write hold counts never drift, a release never applies twice, a failed upgrade stays a
 * failed upgrade.
 */
import { describe, expect, it } from "vitest";
import { LockClient, LockUpgradeError } from "../../../src/index.js";
import { backendKindsUnderTest, LOSSY_BACKEND_TIMEOUT_MS } from "../../support/backends.js";
import { recordingRedis } from "../../support/recording-redis.js";
import { freshPrefix, useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())(
  "read-write lock exactly-once under lost responses on %s",
  (kind) => {
    // Every third response is lost after the command ran; @upstash/redis re-sends the request.
    const bed = useTestBed(kind, { faults: { dropAfterExecute: 0.3, seed: 13 } });

    it("never lets read or write hold counts drift, nor applies a release twice", async () => {
      const client = bed.client({ retries: 5, backendTimeoutMs: LOSSY_BACKEND_TIMEOUT_MS });
      const rw = client.readWriteLock("lossy");
      for (let round = 0; round < 8; round++) {
        const write = await rw.writeLock().acquire({ leaseMs: 30_000 });
        const writeAgain = await rw.writeLock().acquire({ leaseMs: 30_000, owner: write.owner });
        expect(writeAgain.fencingToken).toBe(write.fencingToken);
        const read = await rw.readLock().acquire({ leaseMs: 30_000, owner: write.owner });
        expect(await rw.writeLock().holdCount(write.owner)).toBe(2);
        await writeAgain.release();
        await write.release();
        expect(await rw.writeLock().isLocked()).toBe(false);
        // Downgraded: one read hold left; another reader joins.
        const other = await rw.readLock().acquire({ leaseMs: 30_000 });
        expect(await rw.readLock().holdCount(write.owner)).toBe(1);
        await expect(
          rw.writeLock().acquire({ owner: write.owner, waitMs: 0 }),
        ).rejects.toBeInstanceOf(LockUpgradeError);
        await read.release();
        await other.release();
        expect(await rw.readLock().isLocked()).toBe(false);
      }
      expect(bed.server.faults.counts().dropAfterExecute).toBeGreaterThan(5);
    });
  },
);

describe.each(backendKindsUnderTest())(
  "read-write lock: an attempt delivered again late takes nothing, on %s",
  (kind) => {
    const bed = useTestBed(kind);

    // Issue 13 case 5: a request the client gave up on (a timeout, a hung connection) may still
    // reach Redis after the acquisition went on, succeeded and was released. A busy attempt
    // left no record, so its late copy took a hold nobody knew of.
    // The write lock's case runs with every exclusive kind in exclusive/exclusive-conformance.test.ts.
    it.each(["readLock"] as const)(
      "a busy %s attempt that arrives after the release leaves the owner holding nothing",
      async (side) => {
        const prefix = freshPrefix();
        const recording = recordingRedis(bed.redis());
        const waiter = new LockClient({ redis: recording.client, prefix }).readWriteLock("late");
        const other = new LockClient({ redis: bed.redis(), prefix }).readWriteLock("late");
        const writer = await other.writeLock().acquire({ leaseMs: 30_000 });
        setTimeout(() => void writer.release(), 150);
        const attemptsBefore = recording.calls.length;
        const held = await waiter[side]().acquire({ leaseMs: 30_000, waitMs: 5_000 });
        const attempts = recording.calls.slice(attemptsBefore);
        expect(attempts.length).toBeGreaterThan(1); // at least one busy attempt came first
        await held.release();
        expect(await waiter[side]().holdCount(held.owner)).toBe(0);

        await attempts[0]!(); // the first, busy, attempt reaches Redis again only now
        expect(await waiter[side]().holdCount(held.owner)).toBe(0);
        expect(await waiter.writeLock().isLocked()).toBe(false);
        expect(await waiter.readLock().isLocked()).toBe(false);
      },
    );
  },
);

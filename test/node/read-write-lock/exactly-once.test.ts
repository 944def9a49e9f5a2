/**
 * Exactly-once under responses lost after execution (@upstash/redis and edgelock re-send): read
 * and write hold counts never drift, a release never applies twice, a failed upgrade stays a
 * failed upgrade.
 */
import { describe, expect, it } from "vitest";
import { LockUpgradeError } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { useTestBed } from "../lock/testbed.js";

describe.each(backendKindsUnderTest())(
  "read-write lock exactly-once under lost responses on %s",
  (kind) => {
    // Every third response is lost after the command ran; @upstash/redis re-sends the request.
    const bed = useTestBed(kind, { faults: { dropAfterExecute: 0.3, seed: 13 } });

    it("never lets read or write hold counts drift, nor applies a release twice", async () => {
      const client = bed.client({ retries: 5 });
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

import { describe, expect, it } from "vitest";
import { backendKindsUnderTest } from "../../support/backends.js";
import { useTestBed } from "./testbed.js";

describe.each(backendKindsUnderTest())(
  "exactly-once operations under lost responses on %s",
  (kind) => {
    // Every third response is lost after the command ran; @upstash/redis re-sends the request.
    const bed = useTestBed(kind, { faults: { dropAfterExecute: 0.3, seed: 7 } });

    it("never lets hold counts drift, nor applies a release twice", async () => {
      const client = bed.client({ retries: 5 });
      const lock = client.lock("lossy");
      for (let round = 0; round < 25; round++) {
        const outer = await lock.acquire({ leaseMs: 30_000 });
        const inner = await lock.acquire({ leaseMs: 30_000, owner: outer.owner });
        expect(inner.fencingToken).toBe(outer.fencingToken);
        expect(await lock.holdCount(outer.owner)).toBe(2);
        await inner.release();
        expect(await lock.holdCount(outer.owner)).toBe(1);
        await outer.release();
        expect(await lock.isLocked()).toBe(false);
      }
      expect(bed.server.faults.counts().dropAfterExecute).toBeGreaterThan(10);
    });
  },
);

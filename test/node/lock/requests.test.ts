import { describe, expect, it } from "vitest";
import { backendKindsUnderTest } from "../../support/backends.js";
import { useTestBed } from "./testbed.js";

describe.each(backendKindsUnderTest())("requests per operation on %s", (kind) => {
  const bed = useTestBed(kind);

  it("costs one request to acquire and one to release when uncontended", async () => {
    const client = bed.client();
    const lock = client.lock("counted");
    // The first call on a fresh Redis client sends EVAL, later ones EVALSHA: one request either way.
    for (let round = 0; round < 3; round++) {
      const beforeAcquire = bed.requests();
      const held = await lock.acquire({ leaseMs: 5_000 });
      expect(bed.requests() - beforeAcquire).toBe(1);
      const beforeRelease = bed.requests();
      await held.release();
      expect(bed.requests() - beforeRelease).toBe(1);
    }
  });

  it("costs one request per watchdog renewal and per extend", async () => {
    const client = bed.client();
    const held = await client.lock("extend-count").acquire({ leaseMs: 5_000 });
    const before = bed.requests();
    await held.extend(6_000);
    expect(bed.requests() - before).toBe(1);
    await held.release();
  });

  it("falls back to EVAL once after the script cache is flushed", async () => {
    const redis = bed.redis();
    const client = bed.client({ redis });
    const lock = client.lock("flushed");
    await (await lock.acquire({ leaseMs: 5_000 })).release(); // EVAL, caches the script
    await redis.scriptFlush();
    const before = bed.requests();
    const held = await lock.acquire({ leaseMs: 5_000 });
    expect(bed.requests() - before).toBe(2); // EVALSHA → NOSCRIPT, then EVAL
    const again = bed.requests();
    await held.release();
    expect(bed.requests() - again).toBeLessThanOrEqual(2);
    const third = bed.requests();
    await (await lock.acquire({ leaseMs: 5_000 })).release();
    expect(bed.requests() - third).toBe(2);
  });
});

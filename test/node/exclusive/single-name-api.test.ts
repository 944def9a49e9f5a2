import { describe, expect, it } from "vitest";
import { backendKindsUnderTest } from "../../support/backends.js";
import { useTestBed } from "./testbed.js";

describe.each(backendKindsUnderTest())("the single-name lock API (%s)", (kind) => {
  const bed = useTestBed(kind);

  it("tags each kind, and reads the remaining lease as remainingTtlMs and its old alias", async () => {
    const client = bed.client();
    const rw = client.readWriteLock("api-rw");
    const locks = [
      [client.lock("api-lock"), "lock"],
      [client.fairLock("api-fair"), "fairLock"],
      [rw.readLock(), "readLock"],
      [rw.writeLock(), "writeLock"],
    ] as const;
    for (const [lock, tag] of locks) {
      expect(lock.kind).toBe(tag);
      expect(await lock.remainingTtlMs()).toBeNull();
      const held = await lock.acquire({ leaseMs: 5_000 });
      const ttl = await lock.remainingTtlMs();
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(5_000);
      expect(await lock.remainingTtl()).toBeLessThanOrEqual(ttl ?? 0);
      expect(await lock.holdCount(held.owner)).toBe(1);
      await lock.release({ owner: held.owner });
      expect(await lock.isLocked()).toBe(false);
    }
  });
});

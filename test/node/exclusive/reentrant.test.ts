import { describe, expect, it } from "vitest";
import { LockClient, LockInputError, LockNotHeldError } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { useTestBed } from "./testbed.js";

describe.each(backendKindsUnderTest())("reentrant lock on %s", (kind) => {
  const bed = useTestBed(kind);

  it("acquires, reports state, and releases", async () => {
    const client = bed.client();
    const lock = client.lock("orders:42");
    expect(await lock.isLocked()).toBe(false);
    expect(await lock.remainingTtl()).toBeNull();

    const held = await lock.acquire({ leaseMs: 10_000 });
    expect(held.name).toBe("orders:42");
    expect(held.owner).toMatch(/^[0-9a-f]{32}$/);
    expect(held.fencingToken).toBe(1);
    expect(held.leaseMs).toBe(10_000);
    expect(held.signal.aborted).toBe(false);
    expect(await lock.isLocked()).toBe(true);
    expect(await lock.isHeldBy(held.owner)).toBe(true);
    expect(await lock.holdCount(held.owner)).toBe(1);
    const ttl = await lock.remainingTtl();
    expect(ttl).toBeGreaterThan(9_000);
    expect(ttl).toBeLessThanOrEqual(10_000);

    await held.release();
    expect(held.released).toBe(true);
    expect(await lock.isLocked()).toBe(false);
  });

  it("re-enters for the same owner, with the same fencing token, and counts holds", async () => {
    const lock = bed.client().lock("reentry");
    const outer = await lock.acquire({ leaseMs: 5_000 });
    const inner = await lock.acquire({ leaseMs: 5_000, owner: outer.owner });
    expect(inner.fencingToken).toBe(outer.fencingToken);
    expect(await lock.holdCount(outer.owner)).toBe(2);
    await inner.release();
    expect(await lock.holdCount(outer.owner)).toBe(1);
    expect(await lock.isLocked()).toBe(true);
    await outer.release();
    expect(await lock.isLocked()).toBe(false);
  });

  it("never lets two acquisitions without a shared owner share the lock", async () => {
    const lock = bed.client().lock("exclusive");
    const first = await lock.acquire({ leaseMs: 5_000 });
    expect(await lock.tryAcquire({ leaseMs: 5_000 })).toBeNull();
    await first.release();
    const second = await lock.tryAcquire({ leaseMs: 5_000 });
    expect(second).not.toBeNull();
    expect(second?.fencingToken).toBe(first.fencingToken + 1);
    await second?.release();
  });

  it("re-enters inside one scope and excludes a concurrent scope", async () => {
    const client = bed.client();
    const lock = client.lock("scoped");
    await client.scope(async () => {
      const outer = await lock.acquire({ leaseMs: 5_000 });
      expect(client.currentOwner).toBe(outer.owner);
      const inner = await lock.acquire({ leaseMs: 5_000 });
      expect(inner.owner).toBe(outer.owner);
      expect(await lock.holdCount()).toBe(2);
      const other = await client.scope(() => lock.tryAcquire({ leaseMs: 5_000 }));
      expect(other).toBeNull();
      await inner.release();
      await outer.release();
    });
    expect(client.currentOwner).toBeUndefined();
  });

  it("refuses a release by an owner that does not hold it", async () => {
    const lock = bed.client().lock("not-yours");
    const held = await lock.acquire({ leaseMs: 5_000 });
    await expect(lock.release({ owner: LockClient.newOwner() })).rejects.toBeInstanceOf(
      LockNotHeldError,
    );
    expect(await lock.holdCount(held.owner)).toBe(1);
    await lock.release({ owner: held.owner });
    expect(await lock.isLocked()).toBe(false);
    await expect(held.release()).rejects.toThrow(/not held by this owner/);
  });

  it("releases a hold from another client that knows the owner", async () => {
    const first = bed.client();
    const held = await first.lock("handover").acquire({ leaseMs: 5_000 });
    const other = new LockClient({ redis: bed.redis(), prefix: first.prefix });
    await other.lock("handover").release({ owner: held.owner });
    expect(await first.lock("handover").isLocked()).toBe(false);
  });

  it("makes a second release of one handle an error without a request", async () => {
    const lock = bed.client().lock("twice");
    const held = await lock.acquire({ leaseMs: 5_000 });
    await held.release();
    const before = bed.requests();
    await expect(held.release()).rejects.toBeInstanceOf(LockNotHeldError);
    await expect(held.extend(1_000)).rejects.toBeInstanceOf(LockNotHeldError);
    expect(bed.requests()).toBe(before);
  });

  it("force-releases whoever holds it and keeps fencing tokens growing", async () => {
    const lock = bed.client().lock("forced");
    const held = await lock.acquire({ leaseMs: 5_000 });
    expect(await lock.forceRelease()).toBe(true);
    expect(await lock.forceRelease()).toBe(false);
    const next = await lock.acquire({ leaseMs: 5_000 });
    expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
    await next.release();
  });

  it("releases with `await using`", async () => {
    const lock = bed.client().lock("disposable");
    {
      await using held = await lock.acquire({ leaseMs: 5_000 });
      expect(await lock.isHeldBy(held.owner)).toBe(true);
    }
    expect(await lock.isLocked()).toBe(false);
  });

  it("withLock runs the function under the lock and keeps its own error", async () => {
    const client = bed.client();
    const value = await client.withLock("with", async (held) => {
      expect(await client.lock("with").isHeldBy(held.owner)).toBe(true);
      return 7;
    });
    expect(value).toBe(7);
    const failure = new Error("work failed");
    await expect(
      client.withLock("with", async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await client.lock("with").isLocked()).toBe(false);
  });

  it("extends a lease", async () => {
    const lock = bed.client().lock("extend");
    const held = await lock.acquire({ leaseMs: 1_000 });
    await held.extend(20_000);
    expect(held.leaseMs).toBe(20_000);
    expect(await lock.remainingTtl()).toBeGreaterThan(15_000);
    await held.release();
  });

  it("keeps prefixes apart", async () => {
    const a = bed.client();
    const b = bed.client();
    const held = await a.lock("same-name").acquire({ leaseMs: 5_000 });
    const other = await b.lock("same-name").tryAcquire({ leaseMs: 5_000 });
    expect(other).not.toBeNull();
    await held.release();
    await other?.release();
  });

  it("rejects bad input before sending anything", async () => {
    const client = bed.client();
    const before = bed.requests();
    expect(() => client.lock("")).toThrow(LockInputError);
    expect(() => client.lock("a{b}")).toThrow(/hash tag/);
    await expect(client.lock("ok").acquire({ leaseMs: 5 })).rejects.toThrow(/leaseMs/);
    await expect(client.lock("ok").acquire({ waitMs: -1 })).rejects.toThrow(LockInputError);
    await expect(client.lock("ok").acquire({ owner: "short" })).rejects.toThrow(/owner/);
    expect(bed.requests()).toBe(before);
  });
});

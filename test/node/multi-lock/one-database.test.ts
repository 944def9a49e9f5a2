import { describe, expect, it } from "vitest";
import {
  type Lock,
  LockInputError,
  LockNotHeldError,
  LockWaitTimeoutError,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sleepMs, until, useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("MultiLock on one database (%s)", (kind) => {
  const bed = useTestBed(kind);

  it("acquires every member in one request and releases them in one", async () => {
    const client = bed.client();
    const locks = ["a", "b", "c"].map((name) => client.lock(name));
    const multi = client.multiLock(locks);
    expect(multi.databases).toBe(1);
    for (let round = 0; round < 3; round++) {
      const beforeAcquire = bed.requests();
      const held = await multi.acquire({ leaseMs: 5_000 });
      expect(bed.requests() - beforeAcquire).toBe(1);
      for (const lock of locks) expect(await lock.holdCount(held.owner)).toBe(1);
      const beforeRelease = bed.requests();
      await held.release();
      expect(bed.requests() - beforeRelease).toBe(1);
      for (const lock of locks) expect(await lock.isLocked()).toBe(false);
    }
  });

  it("takes nothing when one member is held by another owner", async () => {
    const client = bed.client();
    const [a, b, c] = ["a", "b", "c"].map((name) => client.lock(name)) as [
      ReturnType<typeof client.lock>,
      ReturnType<typeof client.lock>,
      ReturnType<typeof client.lock>,
    ];
    const other = await b.acquire({ leaseMs: 5_000 });
    const before = bed.requests();
    expect(await client.multiLock([a, b, c]).tryAcquire({ leaseMs: 5_000 })).toBeNull();
    expect(bed.requests() - before).toBe(1);
    expect(await a.isLocked()).toBe(false);
    expect(await c.isLocked()).toBe(false);
    expect(await b.holdCount(other.owner)).toBe(1);
    await other.release();
  });

  it("waits until the busy member is free, and times out naming the multi-lock", async () => {
    const client = bed.client();
    const [a, b] = [client.lock("a"), client.lock("b")];
    const multi = client.multiLock([a, b]);
    const other = await b.acquire({ leaseMs: 5_000 });
    await expect(multi.acquire({ leaseMs: 5_000, waitMs: 150 })).rejects.toSatisfy(
      (error: unknown) =>
        error instanceof LockWaitTimeoutError &&
        error.lockName === "multi(a, b)" &&
        !!error.holderTtlMs &&
        error.message.includes('busy member: "b"'),
    );
    setTimeout(() => void other.release(), 100);
    const held = await multi.acquire({ leaseMs: 5_000, waitMs: 5_000 });
    expect(await a.holdCount(held.owner)).toBe(1);
    expect(await b.holdCount(held.owner)).toBe(1);
    await held.release();
  });

  it("re-enters per member and reports each member's own fencing token", async () => {
    const client = bed.client();
    const [a, b] = [client.lock("a"), client.lock("b")];
    // Push a's counter ahead so that the members' tokens differ.
    for (let i = 0; i < 2; i++) await (await a.acquire({ leaseMs: 5_000 })).release();
    const single = await a.acquire({ leaseMs: 5_000 });
    expect(single.fencingToken).toBe(3);
    const multi = client.multiLock([a, b]);
    const outer = await multi.acquire({ leaseMs: 5_000, owner: single.owner });
    expect(outer.members).toEqual([
      { name: "a", fencingToken: 3 }, // re-entered: the same token as the single hold
      { name: "b", fencingToken: 1 },
    ]);
    const inner = await multi.acquire({ leaseMs: 5_000, owner: single.owner });
    expect(inner.fencingTokens).toEqual([3, 1]);
    expect(await a.holdCount(single.owner)).toBe(3);
    expect(await b.holdCount(single.owner)).toBe(2);
    await inner.release();
    await outer.release();
    expect(await a.holdCount(single.owner)).toBe(1);
    expect(await b.isLocked()).toBe(false);
    await single.release();
    const next = await multi.acquire({ leaseMs: 5_000 });
    expect(next.fencingTokens).toEqual([4, 2]);
    await next.release();
  });

  it("releases the other members and names the one that was lost", async () => {
    const client = bed.client();
    const locks = ["a", "b", "c"].map((name) => client.lock(name));
    const held = await client.multiLock(locks).acquire({ leaseMs: 5_000 });
    await locks[1]!.forceRelease();
    await expect(held.release()).rejects.toSatisfy(
      (error: unknown) => error instanceof LockNotHeldError && /"b"/.test(error.message),
    );
    for (const lock of locks) expect(await lock.isLocked()).toBe(false);
    await expect(held.release()).rejects.toThrow(/handle was released/);
  });

  it("extends every member, and fails and aborts the signal when one is gone", async () => {
    const client = bed.client();
    const locks = [client.lock("a"), client.lock("b")];
    const held = await client.multiLock(locks).acquire({ leaseMs: 1_000 });
    const before = bed.requests();
    await held.extend(20_000);
    expect(bed.requests() - before).toBe(1);
    for (const lock of locks) expect(await lock.remainingTtl()).toBeGreaterThan(10_000);
    await locks[0]!.forceRelease();
    await expect(held.extend(20_000)).rejects.toBeInstanceOf(LockNotHeldError);
    expect(held.signal.aborted).toBe(true);
    // Nothing was re-armed: b keeps its earlier lease, not a fresh one.
    expect(await locks[1]!.remainingTtl()).toBeLessThanOrEqual(20_000);
    await held.release().catch(() => {});
    expect(await locks[1]!.isLocked()).toBe(false);
  });

  it("renews every member with the watchdog while held", async () => {
    const client = bed.client({ watchdogTimeoutMs: 600 });
    const locks = [client.lock("a"), client.lock("b")];
    const held = await client.multiLock(locks).acquire();
    expect(held.renewing).toBe(true);
    await sleepMs(1_500);
    for (const lock of locks) expect(await lock.isHeldBy(held.owner)).toBe(true);
    expect(held.signal.aborted).toBe(false);
    await held.release();
    for (const lock of locks) expect(await lock.isLocked()).toBe(false);
  });

  it("lets a handle whose hold ended neither release nor extend a later hold of its owner", async () => {
    const client = bed.client();
    const locks = ["g1", "g2"].map((name) => client.lock(name));
    const multi = client.multiLock(locks);
    const ended = await multi.acquire({ leaseMs: 100 });
    await until(async () => !(await locks[0]!.isLocked()) && !(await locks[1]!.isLocked()));
    const later = await multi.acquire({ leaseMs: 30_000, owner: ended.owner });
    await expect(ended.extend(60_000)).rejects.toBeInstanceOf(LockNotHeldError);
    await expect(ended.release()).rejects.toBeInstanceOf(LockNotHeldError);
    for (const lock of locks) expect(await lock.holdCount(ended.owner)).toBe(1);
    await later.release();
    for (const lock of locks) expect(await lock.isLocked()).toBe(false);
  });

  it("expires every member with the lease and aborts the signal", async () => {
    const client = bed.client();
    const locks = [client.lock("a"), client.lock("b")];
    const held = await client.multiLock(locks).acquire({ leaseMs: 200 });
    await new Promise((resolve) => held.signal.addEventListener("abort", resolve));
    await sleepMs(20);
    for (const lock of locks) expect(await lock.isLocked()).toBe(false);
  });

  it("refuses bad input before any request", async () => {
    const client = bed.client();
    const before = bed.requests();
    expect(() => client.multiLock([])).toThrow(LockInputError);
    expect(() => client.multiLock(["a"] as never)).toThrow(LockInputError);
    expect(() => client.multiLock("a" as never)).toThrow(LockInputError);
    expect(() => client.multiLock([client.lock("a"), client.lock("a")])).toThrow(/listed twice/);
    // A fair lock is not a Lock to TypeScript; the runtime check is for JavaScript callers.
    const fair = client.fairLock("b") as unknown as Lock;
    expect(() => client.multiLock([client.lock("a"), fair])).toThrow(/fair lock/);
    const multi = client.multiLock([client.lock("a")]);
    await expect(multi.acquire({ leaseMs: 10 })).rejects.toBeInstanceOf(LockInputError);
    await expect(multi.acquire({ leaseMS: 1_000 } as never)).rejects.toBeInstanceOf(LockInputError);
    expect(bed.requests()).toBe(before);
  });

  it("releases with await using", async () => {
    const client = bed.client();
    const locks = [client.lock("a"), client.lock("b")];
    {
      await using held = await client.multiLock(locks).acquire({ leaseMs: 5_000 });
      expect(await locks[0]!.isHeldBy(held.owner)).toBe(true);
    }
    for (const lock of locks) expect(await lock.isLocked()).toBe(false);
  });
});

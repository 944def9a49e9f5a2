/**
 * The semaphore's API as documented: capacity in Redis (trySet, set, add, drain, available),
 * acquisitions of several permits as one hold, handles (release, extend, await using),
 * withPermits, typed errors before any request and from the server's answers.
 */
import { describe, expect, it } from "vitest";
import {
  LockInputError,
  LockNotHeldError,
  LockWaitTimeoutError,
  SemaphoreCapacityError,
  SemaphoreNotInitializedError,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sleepMs, useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("semaphore API on %s", (kind) => {
  const bed = useTestBed(kind);

  it("admits at most its capacity, counting permits per hold", async () => {
    const semaphore = bed.client().semaphore("api-capacity");
    expect(await semaphore.trySetPermits(3)).toBe(true);
    const two = await semaphore.acquire({ permits: 2, leaseMs: 10_000 });
    expect(two.permits).toBe(2);
    expect(await semaphore.availablePermits()).toBe(1);
    expect(await semaphore.tryAcquire({ permits: 2, leaseMs: 10_000 })).toBeNull();
    const one = await semaphore.tryAcquire({ leaseMs: 10_000 });
    expect(one).not.toBeNull();
    expect(one!.fencingToken).toBeGreaterThan(two.fencingToken);
    expect(await semaphore.state()).toMatchObject({ capacity: 3, held: 3, holds: 2, available: 0 });
    await two.release();
    expect(await semaphore.availablePermits()).toBe(2);
    await one!.release();
    await expect(one!.release()).rejects.toBeInstanceOf(LockNotHeldError);
    expect(await semaphore.state()).toMatchObject({ held: 0, holds: 0, available: 3 });
  });

  it("sets, adds and drains capacity; a shrink below what is held keeps the holds", async () => {
    const semaphore = bed.client().semaphore("api-changes");
    expect(await semaphore.availablePermits()).toBe(0);
    expect((await semaphore.state()).capacity).toBeNull();
    expect(await semaphore.addPermits(2)).toBe(2);
    expect(await semaphore.trySetPermits(5)).toBe(false);
    await semaphore.setPermits(4);
    const held = await semaphore.acquire({ permits: 3, leaseMs: 10_000 });
    // Shrinking below what is held: the hold keeps its permits; nobody new gets in.
    expect(await semaphore.addPermits(-2)).toBe(2);
    expect(held.signal.aborted).toBe(false);
    expect(await semaphore.availablePermits()).toBe(0);
    expect(await semaphore.tryAcquire({ leaseMs: 10_000 })).toBeNull();
    await expect(semaphore.addPermits(-3)).rejects.toBeInstanceOf(SemaphoreCapacityError);
    await held.release();
    expect(await semaphore.availablePermits()).toBe(2);
    // drain takes what is available for good.
    const one = await semaphore.acquire({ leaseMs: 10_000 });
    expect(await semaphore.drainPermits()).toBe(1);
    expect(await semaphore.state()).toMatchObject({ capacity: 1, held: 1, available: 0 });
    await one.release();
    expect(await semaphore.availablePermits()).toBe(1);
  });

  it("refuses acquisitions without capacity, or for more than the capacity", async () => {
    const client = bed.client();
    const unset = client.semaphore("api-unset");
    const error = await unset.acquire().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SemaphoreNotInitializedError);
    expect((error as Error).name).toBe("SemaphoreNotInitializedError");
    expect((await unset.state()).waiters).toBe(0);
    const small = client.semaphore("api-small", { initialPermits: 2 });
    const tooMany = await small.acquire({ permits: 3 }).catch((e: unknown) => e);
    expect(tooMany).toBeInstanceOf(SemaphoreCapacityError);
    expect((tooMany as SemaphoreCapacityError).capacity).toBe(2);
    // initialPermits set the capacity on first use, and does not reset it later.
    await small.setPermits(5);
    const again = client.semaphore("api-small", { initialPermits: 2 });
    const held = await again.acquire({ permits: 4, leaseMs: 5_000 });
    await held.release();
  });

  it("checks input before any request", async () => {
    const client = bed.client();
    const before = bed.requests();
    expect(() => client.semaphore("a{b}")).toThrow(LockInputError);
    expect(() => client.semaphore("x", { initialPermits: 0 })).toThrow(LockInputError);
    expect(() => client.semaphore("x", { nope: 1 } as never)).toThrow(LockInputError);
    const semaphore = client.semaphore("api-input");
    await expect(semaphore.acquire({ permits: 0 })).rejects.toBeInstanceOf(LockInputError);
    await expect(semaphore.acquire({ permits: 1.5 })).rejects.toBeInstanceOf(LockInputError);
    await expect(semaphore.acquire({ leaseMs: 5 })).rejects.toBeInstanceOf(LockInputError);
    await expect(semaphore.acquire({ typo: 1 } as never)).rejects.toBeInstanceOf(LockInputError);
    await expect(semaphore.trySetPermits(-1)).rejects.toBeInstanceOf(LockInputError);
    await expect(semaphore.setPermits(Number.NaN)).rejects.toBeInstanceOf(LockInputError);
    await expect(semaphore.withPermits(null as never)).rejects.toBeInstanceOf(LockInputError);
    expect(bed.requests()).toBe(before);
  });

  it("times out a waiter, which leaves the queue", async () => {
    const semaphore = bed.client().semaphore("api-timeout", { initialPermits: 1 });
    const held = await semaphore.acquire({ leaseMs: 10_000 });
    const error = await semaphore.acquire({ waitMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockWaitTimeoutError);
    // The holder's lease bounds the answer: a permit surely returns within it.
    expect((error as LockWaitTimeoutError).holderTtlMs).toBeLessThanOrEqual(10_000);
    expect((await semaphore.state()).waiters).toBe(0);
    await held.release();
  });

  it("releases withPermits and await using on every path; extend re-arms one hold", async () => {
    const semaphore = bed.client().semaphore("api-scoped", { initialPermits: 1 });
    await expect(
      semaphore.withPermits(() => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(await semaphore.availablePermits()).toBe(1);
    expect(await semaphore.withPermits(async (p) => p.permits)).toBe(1);
    {
      await using permit = await semaphore.acquire({ leaseMs: 300 });
      await permit.extend(5_000);
      await sleepMs(500);
      expect(permit.signal.aborted).toBe(false);
      expect(await semaphore.availablePermits()).toBe(0);
    }
    expect(await semaphore.availablePermits()).toBe(1);
  });

  it("renews a watchdog hold past its lease and frees it when released", async () => {
    const semaphore = bed
      .client({ watchdogTimeoutMs: 300 })
      .semaphore("api-watchdog", { initialPermits: 1 });
    const permit = await semaphore.acquire();
    await sleepMs(900);
    expect(permit.signal.aborted).toBe(false);
    expect(await semaphore.availablePermits()).toBe(0);
    await permit.release();
    expect(await semaphore.availablePermits()).toBe(1);
  });
});

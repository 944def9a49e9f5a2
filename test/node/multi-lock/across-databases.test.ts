import { Redis } from "@upstash/redis";
import { afterEach, describe, expect, it } from "vitest";
import { LockBackendError, type LockClient } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, type TestBed, useTestBed } from "../exclusive/testbed.js";

/** A client on `bed` whose @upstash/redis retries a lost response once, quickly. */
function quickClient(bed: TestBed, prefix = freshPrefix()): LockClient {
  return bed.client({
    prefix,
    redis: new Redis({
      url: bed.server.url,
      token: bed.server.token,
      retry: { retries: 1, backoff: () => 5 },
    }),
    retries: 1,
  });
}

describe.each(backendKindsUnderTest())("MultiLock across databases (%s)", (kind) => {
  const one = useTestBed(kind);
  const two = useTestBed(kind);
  afterEach(() => {
    one.server.faults.disable();
    two.server.faults.disable();
  });

  function setup() {
    const prefix = freshPrefix();
    const first = quickClient(one, prefix);
    const second = quickClient(two, prefix);
    const x = first.lock("x");
    const y = second.lock("y");
    const z = first.lock("z");
    return { first, second, x, y, z, multi: first.multiLock([x, y, z]) };
  }

  it("costs one request per database to acquire and one to release", async () => {
    const { x, y, z, multi } = setup();
    expect(multi.databases).toBe(2);
    const [oneBefore, twoBefore] = [one.requests(), two.requests()];
    const held = await multi.acquire({ leaseMs: 5_000 });
    expect([one.requests() - oneBefore, two.requests() - twoBefore]).toEqual([1, 1]);
    expect(held.fencingTokens).toEqual([1, 1, 1]);
    for (const lock of [x, y, z]) expect(await lock.holdCount(held.owner)).toBe(1);
    const [oneMid, twoMid] = [one.requests(), two.requests()];
    await held.release();
    expect([one.requests() - oneMid, two.requests() - twoMid]).toEqual([1, 1]);
    for (const lock of [x, y, z]) expect(await lock.isLocked()).toBe(false);
  });

  it("rolls back the members it took when a member on the other database is busy", async () => {
    const { x, y, z, multi } = setup();
    const other = await y.acquire({ leaseMs: 5_000 });
    expect(await multi.tryAcquire({ leaseMs: 5_000 })).toBeNull();
    expect(await x.isLocked()).toBe(false);
    expect(await z.isLocked()).toBe(false);
    expect(await y.holdCount(other.owner)).toBe(1);
    await other.release();
  });

  it("rolls back and says so when a database refuses before running anything", async () => {
    const { x, y, z, multi } = setup();
    two.server.faults.configure({ failBeforeExecute: 1, commands: ["eval", "evalsha"] });
    await expect(multi.acquire({ leaseMs: 5_000 })).rejects.toBeInstanceOf(LockBackendError);
    two.server.faults.disable();
    for (const lock of [x, y, z]) expect(await lock.isLocked()).toBe(false);
  });

  it("leaves no hold behind when a database ran the acquire but every answer was lost", async () => {
    const { x, y, z, multi } = setup();
    two.server.faults.configure({ dropAfterExecute: 1, commands: ["eval", "evalsha"] });
    // The acquire ran on the second database; so did the rollback, though its answer was lost too.
    await expect(multi.acquire({ leaseMs: 30_000 })).rejects.toThrow(/rollback/);
    expect(two.server.faults.counts().dropAfterExecute).toBeGreaterThanOrEqual(2);
    two.server.faults.disable();
    for (const lock of [x, y, z]) expect(await lock.isLocked()).toBe(false);
  });

  it("counts a re-sent acquire or release once when answers are lost at random", async () => {
    const { x, y, z, multi } = setup();
    const lossy = { dropAfterExecute: 0.3, commands: ["eval", "evalsha"] } as const;
    two.server.faults.configure({ ...lossy, seed: 11 });
    let completed = 0;
    for (let round = 0; round < 12; round++) {
      two.server.faults.configure(lossy);
      // A failed acquire has rolled back (or says it could not confirm it): checked below.
      const held = await multi.acquire({ leaseMs: 30_000 }).catch(() => null);
      if (held !== null) {
        const again = await multi.acquire({ leaseMs: 30_000, owner: held.owner }).catch(() => null);
        // release() again after a failure re-sends the same operation ids: never twice.
        if (again) await again.release().catch(() => again.release());
        await held.release().catch(() => held.release());
        completed += 1;
      }
      two.server.faults.disable();
      for (const lock of [x, y, z]) expect(await lock.isLocked()).toBe(false);
    }
    expect(completed).toBeGreaterThan(0);
    expect(two.server.faults.counts().dropAfterExecute).toBeGreaterThan(3);
  });

  it("never deadlocks or overlaps with members listed in opposite orders", async () => {
    const prefix = freshPrefix();
    const inside = new Map<string, number>();
    let overlaps = 0;
    let completions = 0;
    const worker = async (order: "xy" | "yx") => {
      const first = quickClient(one, prefix);
      const second = quickClient(two, prefix);
      const x = first.lock("x");
      const y = second.lock("y");
      const multi = first.multiLock(order === "xy" ? [x, y] : [y, x]);
      for (let round = 0; round < 6; round++) {
        const held = await multi.acquire({ leaseMs: 10_000, waitMs: 20_000 });
        for (const name of ["x", "y"]) {
          inside.set(name, (inside.get(name) ?? 0) + 1);
          if (inside.get(name)! > 1) overlaps += 1;
        }
        await sleepMs(3);
        for (const name of ["x", "y"]) inside.set(name, inside.get(name)! - 1);
        await held.release();
        completions += 1;
      }
    };
    await Promise.all([worker("xy"), worker("yx"), worker("xy"), worker("yx")]);
    expect(overlaps).toBe(0);
    expect(completions).toBe(24);
  });
});

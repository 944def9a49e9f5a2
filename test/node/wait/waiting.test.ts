import { describe, expect, it } from "vitest";
import {
  LockAbortedError,
  LockBudgetExceededError,
  LockWaitTimeoutError,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sleepMs, useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("waiting for a held lock on %s", (kind) => {
  const bed = useTestBed(kind);

  it("tryAcquire with waitMs succeeds when the holder releases", async () => {
    const client = bed.client();
    const held = await client.lock("w1").acquire({ leaseMs: 10_000 });
    setTimeout(() => void held.release(), 150);
    const started = Date.now();
    const next = await client.lock("w1").tryAcquire({ waitMs: 5_000, leaseMs: 1_000 });
    expect(next).not.toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    await next?.release();
  });

  it("waits no longer than the holder's lease (polls are bounded by its pttl)", async () => {
    const client = bed.client({ wait: { mode: "poll", initialDelayMs: 5_000, maxDelayMs: 5_000 } });
    await client.lock("w2").acquire({ leaseMs: 300 });
    const started = Date.now();
    const next = await client.lock("w2").acquire({ waitMs: 10_000, leaseMs: 1_000 });
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(200);
    expect(waited).toBeLessThan(2_500);
    await next.release();
  });

  it("gives up after waitMs: null from tryAcquire, LockWaitTimeoutError from acquire", async () => {
    const client = bed.client();
    await client.lock("w3").acquire({ leaseMs: 10_000 });
    expect(await client.lock("w3").tryAcquire()).toBeNull();
    expect(await client.lock("w3").tryAcquire({ waitMs: 100 })).toBeNull();
    const error = await client
      .lock("w3")
      .acquire({ waitMs: 100 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockWaitTimeoutError);
    expect((error as LockWaitTimeoutError).holderTtlMs).toBeGreaterThan(5_000);
  });

  it("stops waiting on abort", async () => {
    const client = bed.client();
    await client.lock("w4").acquire({ leaseMs: 10_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    await expect(client.lock("w4").acquire({ signal: controller.signal })).rejects.toBeInstanceOf(
      LockAbortedError,
    );
    expect(Date.now() - started).toBeLessThan(2_000);
    await expect(client.lock("w4").acquire({ signal: AbortSignal.abort() })).rejects.toBeInstanceOf(
      LockAbortedError,
    );
  });

  it("ends with LockBudgetExceededError when the poll budget is spent, after exactly that many requests", async () => {
    const client = bed.client({
      wait: { mode: "poll", maxPolls: 4, initialDelayMs: 5, maxDelayMs: 5 },
    });
    await client.lock("w5").acquire({ leaseMs: 10_000 });
    const before = bed.requests();
    const error = await client
      .lock("w5")
      .acquire()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBudgetExceededError);
    expect((error as LockBudgetExceededError).polls).toBe(4);
    expect(bed.requests() - before).toBe(4);
  });

  it("hands the lock over to the next waiter after a release", async () => {
    const client = bed.client();
    const order: string[] = [];
    const first = await client.lock("w6").acquire({ leaseMs: 5_000 });
    const waiter = client
      .lock("w6")
      .acquire({ leaseMs: 5_000, waitMs: 5_000 })
      .then((h) => {
        order.push("waiter");
        return h;
      });
    await sleepMs(100);
    order.push("release");
    await first.release();
    const second = await waiter;
    expect(order).toEqual(["release", "waiter"]);
    await second.release();
  });
});

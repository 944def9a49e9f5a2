/**
 * Issue 44 item 7: a semaphore's errors speak of permits and the semaphore, not of a lock held by
 * another owner.
 */
import { describe, expect, it } from "vitest";
import {
  LockBudgetExceededError,
  LockNotHeldError,
  LockWaitTimeoutError,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sleepMs, useTestBed } from "../exclusive/testbed.js";

async function failure(call: () => Promise<unknown>): Promise<Error> {
  const error = await call().then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(Error);
  return error as Error;
}

describe.each(backendKindsUnderTest())("a semaphore's errors on %s", (kind) => {
  const bed = useTestBed(kind);

  it("a full semaphore's wait ends in permits not free, not a lock held", async () => {
    const semaphore = bed.client().semaphore("sem:a", { initialPermits: 1 });
    const held = await semaphore.acquire({ leaseMs: 5_000 });
    const error = await failure(() => semaphore.acquire({ waitMs: 200 }));
    expect(error).toBeInstanceOf(LockWaitTimeoutError);
    expect(error.message).toMatch(/^Semaphore "sem:a": 1 permit not free after waiting 200 ms/);
    expect(error.message).not.toMatch(/\block\b/i);
    const budget = await failure(() =>
      semaphore.acquire({ permits: 1, waitMs: 5_000, wait: { maxPolls: 2 } }),
    );
    expect(budget).toBeInstanceOf(LockBudgetExceededError);
    expect(budget.message).toMatch(/^Gave up on semaphore "sem:a" \(1 permit\) after 2 requests/);
    await held.release();
  });

  it("a permit hold released after its lease names the semaphore's permits", async () => {
    const semaphore = bed.client().semaphore("sem:b", { initialPermits: 2 });
    const held = await semaphore.acquire({ leaseMs: 150 });
    await sleepMs(400);
    const error = await failure(() => held.release());
    expect(error).toBeInstanceOf(LockNotHeldError);
    expect(error.message).toContain('permits of semaphore "sem:b"');
    expect(error.message).not.toMatch(/\block "/);
    expect(String(held.signal.reason)).toContain('permits of semaphore "sem:b"');
  });
});

/**
 * Issue 44 item 4: code that waits for its own client's hold (a nested acquisition outside
 * `client.scope()`, a write lock after a read hold of another owner) is told so, instead of being
 * blamed on "another owner"; a wait behind another client's hold keeps the plain message.
 */
import { describe, expect, it } from "vitest";
import { LockWaitTimeoutError } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { useTestBed } from "../exclusive/testbed.js";

async function rejection(call: () => Promise<unknown>): Promise<LockWaitTimeoutError> {
  const error = await call().then(
    () => undefined,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(LockWaitTimeoutError);
  return error as LockWaitTimeoutError;
}

describe.each(backendKindsUnderTest())("a wait for the client's own hold on %s", (kind) => {
  const bed = useTestBed(kind);

  it("nested client.withLock() outside a scope is told it waited for its own hold", async () => {
    const client = bed.client();
    const error = await rejection(() =>
      client.withLock("w", () => client.withLock("w", () => "inner", { waitMs: 300 }), {
        leaseMs: 5_000,
      }),
    );
    expect(error.heldByThisClient).toBe(true);
    expect(error.message).toContain("by another owner of this LockClient");
    expect(error.message).toContain("client.scope()");
    expect(error.message).not.toContain("still held by another owner after");
    // The outer hold was released on the way out.
    expect(await client.lock("w").isLocked()).toBe(false);
  });

  it("inside one scope the same nesting re-enters", async () => {
    const client = bed.client();
    const result = await client.scope(() =>
      client.withLock("w2", () => client.withLock("w2", () => "inner", { waitMs: 300 })),
    );
    expect(result).toBe("inner");
  });

  it("a write lock after the caller's read hold of another owner is told so", async () => {
    const client = bed.client();
    const rw = client.readWriteLock("catalog");
    const read = await rw.readLock().acquire({ leaseMs: 5_000 });
    const error = await rejection(() => rw.writeLock().acquire({ waitMs: 300 }));
    expect(error.heldByThisClient).toBe(true);
    await read.release();
    // Released: the same wait no longer names this client.
    const write = await rw.writeLock().acquire({ waitMs: 1_000, leaseMs: 5_000 });
    await write.release();
  });

  it("behind another client's hold the message names another owner", async () => {
    const holder = bed.client();
    const waiter = bed.client({ prefix: holder.prefix });
    const held = await holder.lock("elsewhere").acquire({ leaseMs: 5_000 });
    const error = await rejection(() => waiter.lock("elsewhere").acquire({ waitMs: 300 }));
    expect(error.heldByThisClient).toBe(false);
    expect(error.message).toMatch(
      /^Lock "elsewhere" is still held by another owner after waiting 300 ms/,
    );
    await held.release();
  });

  it("a released or lost hold is forgotten: a later wait is not told it is its own", async () => {
    const client = bed.client();
    const other = bed.client({ prefix: client.prefix });
    const first = await client.lock("later").acquire({ leaseMs: 200 });
    await first.release();
    const lapsed = await client.lock("later").acquire({ leaseMs: 150 });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(lapsed.signal.aborted).toBe(true);
    const held = await other.lock("later").acquire({ leaseMs: 5_000 });
    const error = await rejection(() => client.lock("later").acquire({ waitMs: 300 }));
    expect(error.heldByThisClient).toBe(false);
    await held.release();
  });
});

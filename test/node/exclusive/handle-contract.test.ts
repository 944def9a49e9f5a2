import { describe, expect, it } from "vitest";
import { type HeldLock, RedLock } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { useTestBed } from "./testbed.js";

/** What any code written against the contract can rely on, whatever the kind. */
async function useThroughContract(held: HeldLock, expectedName: string): Promise<void> {
  expect(held.name).toBe(expectedName);
  expect(held.owner).toMatch(/\S/);
  expect(held.renewing).toBe(false);
  expect(held.leaseMs).toBe(5_000);
  expect(held.expiresAt).toBeGreaterThan(Date.now());
  expect(held.expiresAt).toBeLessThanOrEqual(Date.now() + 5_000);
  expect(held.signal.aborted).toBe(false);
  await held.extend(6_000);
  expect(held.leaseMs).toBe(6_000);
  expect(held.released).toBe(false);
  await held[Symbol.asyncDispose]();
  expect(held.released).toBe(true);
}

describe.each(backendKindsUnderTest())("every handle honours HeldLock (%s)", (kind) => {
  const bed = useTestBed(kind);

  it("plain, fair, write and read handles", async () => {
    const client = bed.client();
    const plain = await client.lock("contract").acquire({ leaseMs: 5_000 });
    expect(plain.fencingToken).toBeGreaterThan(0);
    await useThroughContract(plain, "contract");
    await useThroughContract(
      await client.fairLock("contract-fair").acquire({ leaseMs: 5_000 }),
      "contract-fair",
    );
    const rw = client.readWriteLock("contract-rw");
    await useThroughContract(await rw.writeLock().acquire({ leaseMs: 5_000 }), "contract-rw");
    await useThroughContract(await rw.readLock().acquire({ leaseMs: 5_000 }), "contract-rw");
  });

  it("MultiLock and RedLock handles, with no single fencing token", async () => {
    const client = bed.client();
    const multi = await client
      .multiLock([client.lock("contract-a"), client.lock("contract-b")])
      .acquire({ leaseMs: 5_000 });
    expect(multi.fencingToken).toBeNull();
    expect(multi.fencingTokens).toHaveLength(2);
    await useThroughContract(multi, multi.name);
    const quorum = await new RedLock([client]).lock("contract-q").acquire({ leaseMs: 5_000 });
    expect(quorum.fencingToken).toBeNull();
    expect(quorum.expiresAt).toBe(quorum.validUntil);
    await useThroughContract(quorum, "contract-q");
  });
});

/**
 * Issue 13 item 1: holds of one owner share one key, so an inner hold's extend must never shorten
 * the lease an outer hold was promised (another owner would get the lock while the outer handle
 * still believes it holds it).
 */
import { describe, expect, it } from "vitest";
import { backendKindsUnderTest } from "../../support/backends.js";
import { useTestBed } from "../lock/testbed.js";

describe.each(backendKindsUnderTest())("shared expiry of one owner's holds on %s", (kind) => {
  const bed = useTestBed(kind);

  it("an inner hold's short extend keeps the outer hold's longer lease", async () => {
    const client = bed.client();
    const lock = client.lock("shared-expiry");
    const outer = await lock.acquire({ leaseMs: 10_000 });
    const inner = await lock.acquire({ leaseMs: 10_000, owner: outer.owner });
    await inner.extend(200);
    const ttl = await lock.remainingTtl();
    expect(ttl).toBeGreaterThan(5_000);
    // Another owner is still excluded once the inner hold's short lease is over.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await lock.tryAcquire({ leaseMs: 1_000 })).toBeNull();
    expect(outer.signal.aborted).toBe(false);
    await inner.release();
    await outer.release();
  });

  it("a MultiLock extend keeps a member's longer lease from the same owner's plain hold", async () => {
    const client = bed.client();
    const account = client.lock("account:1");
    const outer = await account.acquire({ leaseMs: 10_000 });
    const group = client.multiLock([account, client.lock("account:2")]);
    const both = await group.acquire({ leaseMs: 10_000, owner: outer.owner });
    await both.extend(200);
    expect(await account.remainingTtl()).toBeGreaterThan(5_000);
    await both.release();
    await outer.release();
  });

  it("an extend past the current end still lengthens the lease", async () => {
    const lock = bed.client().lock("longer-extend");
    const held = await lock.acquire({ leaseMs: 1_000 });
    await held.extend(20_000);
    expect(await lock.remainingTtl()).toBeGreaterThan(15_000);
    await held.release();
  });
});

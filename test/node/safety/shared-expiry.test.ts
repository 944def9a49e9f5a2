/**
 * Issue 13 item 1: holds of one owner share one key, so an inner hold's extend must never shorten
 * the lease an outer hold was promised (another owner would get the lock while the outer handle
 * still believes it holds it).
 */
import { describe, expect, it } from "vitest";
import type { Lock } from "../../../src/index.js";
import { lockInternalsOf } from "../../../src/locks/single-name-lock.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { useTestBed } from "../exclusive/testbed.js";

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

  // All or none: a member whose lease ended before the others' would leave a partial hold.
  it("a MultiLock acquire gives every member the latest end any of them carries", async () => {
    const client = bed.client();
    const account = client.lock("account:1");
    const outer = await account.acquire({ leaseMs: 10_000 });
    const both = await client
      .multiLock([account, client.lock("account:2")])
      .acquire({ leaseMs: 1_000, owner: outer.owner });
    expect(await client.lock("account:2").remainingTtl()).toBeGreaterThan(5_000);
    await both.release();
    await outer.release();
  });

  it("a MultiLock extend gives every member the latest end any of them carries", async () => {
    const client = bed.client();
    const [first, second] = [client.lock("account:1"), client.lock("account:2")];
    const both = await client.multiLock([first, second]).acquire({ leaseMs: 10_000 });
    const inner = await second.acquire({ leaseMs: 30_000, owner: both.owner });
    await both.extend(200);
    expect(await first.remainingTtl()).toBeGreaterThan(20_000);
    await inner.release();
    await both.release();
  });

  it("every member of a MultiLock hold carries the very same expiry time", async () => {
    const client = bed.client();
    const members = Array.from({ length: 64 }, (_, i) => client.lock(`member:${i}`));
    const multi = client.multiLock(members);
    const redis = bed.redis();
    const keys = members.map((member: Lock) => lockInternalsOf(member)!.keys.lock);
    const expiryTimes = async () =>
      new Set(
        await redis.eval<[], number[]>(
          "local t = {} for i = 1, #KEYS do t[i] = redis.call('PEXPIRETIME', KEYS[i]) end return t",
          keys,
          [],
        ),
      );
    // A relative expiry set member by member reads the clock once per key; the clock ticks
    // inside some of these scripts.
    for (let round = 0; round < 20; round++) {
      const held = await multi.acquire({ leaseMs: 5_000 + round });
      expect(await expiryTimes()).toHaveLength(1);
      await held.extend(20_000 + round);
      expect(await expiryTimes()).toHaveLength(1);
      await held.release();
    }
  });

  it("an extend past the current end still lengthens the lease", async () => {
    const lock = bed.client().lock("longer-extend");
    const held = await lock.acquire({ leaseMs: 1_000 });
    await held.extend(20_000);
    expect(await lock.remainingTtl()).toBeGreaterThan(15_000);
    await held.release();
  });
});

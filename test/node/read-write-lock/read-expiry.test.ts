/**
 * Every read hold has its own expiry: a crashed reader stops blocking writers when its own lease
 * ends, whatever the other holds; the watchdog renews each hold on its own; extend() moves one
 * hold only.
 */
import { describe, expect, it } from "vitest";
import { LockClient, LockNotHeldError } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("per-hold read expiry on %s", (kind) => {
  const bed = useTestBed(kind);

  it("frees the lock for a writer when a crashed reader's own lease ends", async () => {
    const rw = bed.client().readWriteLock("crashed-reader");
    // Reader A takes a short lease and "crashes" (never releases); B holds longer.
    const crashed = await rw.readLock().acquire({ leaseMs: 300 });
    const alive = await rw.readLock().acquire({ leaseMs: 10_000 });
    await until(async () => (await rw.readLock().holdCount(crashed.owner)) === 0);
    expect(await rw.readLock().holdCount(alive.owner)).toBe(1);
    expect(await rw.writeLock().tryAcquire({ leaseMs: 10_000 })).toBeNull();
    await alive.release();
    // Nothing of A is left: the writer gets in at once.
    const writer = await rw.writeLock().tryAcquire({ leaseMs: 10_000 });
    expect(writer).not.toBeNull();
    await writer?.release();
  });

  it("lets one owner's short hold expire although its long hold was released", async () => {
    const rw = bed.client().readWriteLock("two-holds");
    const long = await rw.readLock().acquire({ leaseMs: 10_000 });
    const short = await rw.readLock().acquire({ leaseMs: 400, owner: long.owner });
    expect(await rw.readLock().holdCount(long.owner)).toBe(2);
    await long.release();
    const started = Date.now();
    const writer = await rw.writeLock().acquire({ leaseMs: 10_000, waitMs: 5_000 });
    // The writer waited for the short hold's lease only, not for the long one's.
    expect(Date.now() - started).toBeLessThan(2_000);
    // The short hold's handle learns that its lease has ended.
    await until(() => short.signal.aborted, 1_000);
    await writer.release();
  });

  /**
   * A read hold whose lease has ended, after a longer hold of the same lock was released: that
   * release brings the read holds' TTL back to the ended hold's end, since the uncontended fast
   * path of release (issue 42) reads no clock and takes a set that still exists for a live hold.
   * Extend and release must refuse the ended hold.
   */
  async function endedHoldAlone(name: string) {
    const prefix = freshPrefix();
    const rw = bed.client({ prefix }).readWriteLock(name);
    const ended = await rw.readLock().acquire({ leaseMs: 300 });
    const longer = await bed
      .client({ prefix })
      .readWriteLock(name)
      .readLock()
      .acquire({ leaseMs: 10_000 });
    await longer.release();
    await sleepMs(600);
    // The set's TTL followed its last hold's end down: it is gone with the ended hold's lease
    // (had it lived on with the longer hold's, a release would have freed an ended hold).
    expect(await bed.redis().exists(`${prefix}:{${name}}:reads`)).toBe(0);
    return { rw, ended };
  }

  it.each([
    ["extend()", (ended: { extend(ms: number): Promise<void> }) => ended.extend(5_000)],
    ["release()", (ended: { release(): Promise<void> }) => ended.release()],
  ] as const)(
    "a lone read hold whose lease has ended is refused by its handle's %s",
    async (action, act) => {
      const { rw, ended } = await endedHoldAlone(`ended-${action.slice(0, -2)}`);
      const before = bed.requests();
      await expect(act(ended)).rejects.toThrow(LockNotHeldError);
      // Asked of Redis, not decided by the handle.
      expect(bed.requests() - before).toBe(1);
      expect(await rw.readLock().isLocked()).toBe(false);
    },
  );

  it("a lone read hold whose lease has ended is not released by its owner's release({ owner })", async () => {
    const { rw, ended } = await endedHoldAlone("ended-owner");
    await expect(rw.readLock().release({ owner: ended.owner })).rejects.toThrow(LockNotHeldError);
    expect(await rw.readLock().isLocked()).toBe(false);
  });

  /**
   * A read hold whose lease has ended but whose entry is still in the set (the set lives on, as
   * while a later hold's end keeps it): a write attempt does not prune such entries, it counts the
   * live ones only (issue 42), so the entry neither keeps the writer out nor refuses its owner
   * as an upgrade.
   */
  it("a write attempt counts only live read holds: an ended one neither blocks nor refuses", async () => {
    const prefix = freshPrefix();
    const client = bed.client({ prefix });
    const reads = `${prefix}:{ended-entry}:reads`;
    const [seconds, micros] = (await bed.redis().time()).map(Number) as [number, number];
    const now = seconds * 1000 + Math.floor(micros / 1000);
    const writer = LockClient.newOwner();
    // Another owner's ended hold, the set's last: the writer is not kept out by it.
    await bed.redis().zadd(reads, { score: now - 1_000, member: `${LockClient.newOwner()} a` });
    await bed.redis().pexpire(reads, 10_000);
    const first = await client.readWriteLock("ended-entry").writeLock().tryAcquire({
      leaseMs: 10_000,
      owner: writer,
    });
    expect(first).not.toBeNull();
    await first?.release();
    // The writer's own ended hold: no upgrade to refuse.
    await bed.redis().zadd(reads, { score: now - 500, member: `${writer} b` });
    await bed.redis().pexpire(reads, 10_000);
    const second = await client.readWriteLock("ended-entry").writeLock().tryAcquire({
      leaseMs: 10_000,
      owner: writer,
    });
    expect(second).not.toBeNull();
    await second?.release();
  });

  it("renews each read hold in watchdog mode, and extend() moves one hold only", async () => {
    const client = bed.client({ watchdogTimeoutMs: 300 });
    const rw = client.readWriteLock("renewed");
    const watched = await rw.readLock().acquire();
    const leased = await rw.readLock().acquire({ leaseMs: 400, owner: watched.owner });
    await sleepMs(900);
    // The watched hold lived through three watchdog timeouts; the leased one expired.
    expect(watched.signal.aborted).toBe(false);
    expect(leased.signal.aborted).toBe(true);
    expect(await rw.readLock().holdCount(watched.owner)).toBe(1);
    const extended = await rw.readLock().acquire({ leaseMs: 300, owner: watched.owner });
    await extended.extend(5_000);
    await watched.release();
    await sleepMs(500);
    expect(await rw.readLock().holdCount(watched.owner)).toBe(1);
    expect(await rw.readLock().remainingTtl()).toBeGreaterThan(3_000);
    await extended.release();
    expect(await rw.readLock().isLocked()).toBe(false);
    expect(await rw.readLock().remainingTtl()).toBeNull();
  });
});

/**
 * Issue 41 (chaos `rw-sub`, "no hold count drift"): a writer that waited, queued, and whose owner
 * meanwhile came to hold read holds only, is refused (LockUpgradeError). The refusal ends the
 * acquisition: it must leave the queue, the waiting writers and the parked waiters with it, or
 * the next release hands the lock to an owner nobody will release it for (push), or the next
 * writer waits behind a place nobody holds. And an attempt whose answer was lost replays its
 * hold, never refused, whatever the owner's holds became since.
 */
import { afterEach, describe, expect, it } from "vitest";
import { LockClient, LockUpgradeError, type WaitOptions } from "../../../src/index.js";
import type { RedisLike } from "../../../src/transport/redis-like.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { recordingRedis } from "../../support/recording-redis.js";
import { freshPrefix, until, useTestBed } from "../exclusive/testbed.js";

const SCRIPTS = ["eval", "evalsha"];

describe.each(backendKindsUnderTest())("a refused upgrade leaves nothing behind on %s", (kind) => {
  // Parks block only where the backend's pops do: a Redis behind a REST proxy.
  const bed = useTestBed(kind, { profile: "redis" });
  afterEach(() => bed.server.faults.disable());

  const WAITS: Record<string, WaitOptions> = {
    // Short polls and parks: the writer asks again soon after its owner took the read hold.
    polling: { maxDelayMs: 200 },
    push: { mode: "push", parkMs: 200 },
  };

  it.each(Object.entries(WAITS))(
    "%s: a writer refused after it queued takes no place, and the lock is free once every hold is released",
    async (_, wait) => {
      const prefix = freshPrefix();
      // Without writer preference the writer's own owner may take a read hold while it waits.
      const rwOf = (waitOptions: WaitOptions = {}) =>
        bed.client({ prefix, wait: waitOptions }).readWriteLock("doc", { writerPreference: false });
      const rw = rwOf();
      const owner = "upgrading-owner-1";
      const otherReader = await rw.readLock().acquire({ leaseMs: 10_000 });
      const writing = rwOf(wait)
        .writeLock()
        .acquire({ owner, leaseMs: 10_000, waitMs: 8_000 })
        .then(
          () => null,
          (error: unknown) => error,
        );
      await until(async () => (await bed.redis().zcard(`${prefix}:{doc}:queue`)) === 1);
      const ownRead = await rw.readLock().acquire({ owner, leaseMs: 10_000, waitMs: 0 });
      // Its next attempt finds its owner holding read holds only: an upgrade.
      expect(await writing).toBeInstanceOf(LockUpgradeError);

      await ownRead.release();
      await otherReader.release();
      expect(await rw.writeLock().holdCount(owner)).toBe(0);
      expect(await rw.readLock().holdCount(owner)).toBe(0);
      expect(await rw.writeLock().isLocked()).toBe(false);
      // Another writer takes the free lock at once: no place of the refused writer is ahead.
      const next = await rw.writeLock().tryAcquire({ leaseMs: 10_000 });
      expect(next).not.toBeNull();
      await next?.release();
      expect(await bed.redis().zcard(`${prefix}:{doc}:queue`)).toBe(0);
      expect(await bed.redis().hlen(`${prefix}:{doc}:parked`)).toBe(0);
    },
  );

  it("a refused upgrade delivered again late, once its owner's read holds ended, takes nothing", async () => {
    const prefix = freshPrefix();
    const recording = recordingRedis(bed.redis());
    const rwOf = (redis: RedisLike) =>
      new LockClient({ redis, prefix, scriptKeyLocking: false }).readWriteLock("doc");
    const rw = rwOf(bed.redis());
    const read = await rw.readLock().acquire({ leaseMs: 10_000 });
    const sentBefore = recording.calls.length;
    await expect(
      rwOf(recording.client).writeLock().acquire({ owner: read.owner, waitMs: 0 }),
    ).rejects.toBeInstanceOf(LockUpgradeError);
    const refused = recording.calls.slice(sentBefore);
    expect(refused).toHaveLength(1);
    await read.release();
    // The refused request reaches Redis again (a re-send, a late copy): refused again, no hold.
    expect(await refused[0]!()).toEqual([-2]);
    expect(await rw.writeLock().holdCount(read.owner)).toBe(0);
    expect(await rw.writeLock().isLocked()).toBe(false);
  });

  it("a write re-entry whose answer was lost replays its hold after the owner's first write hold ended", async () => {
    const prefix = freshPrefix();
    const rw = bed
      .client({ prefix, redis: bed.redis(), retries: 0 })
      .readWriteLock("doc", { writerPreference: false });
    const owner = "downgrading-owner-1";
    const write = await rw.writeLock().acquire({ owner, leaseMs: 10_000 });
    const read = await rw.readLock().acquire({ owner, leaseMs: 10_000 });
    const dropped = bed.server.faults.counts().dropAfterExecute;
    bed.server.faults.configure({ dropAfterExecute: 1, commands: SCRIPTS });
    const again = rw.writeLock().acquire({ owner, leaseMs: 10_000, waitMs: 8_000 });
    await until(() => bed.server.faults.counts().dropAfterExecute > dropped);
    bed.server.faults.disable();
    await write.release(); // the owner still holds the lost attempt's write hold, and a read hold
    const reentered = await again;
    expect(reentered.fencingToken).toBe(write.fencingToken);
    expect(await rw.writeLock().holdCount(owner)).toBe(1);
    await reentered.release();
    await read.release();
    expect(await rw.writeLock().isLocked()).toBe(false);
    expect(await rw.readLock().isLocked()).toBe(false);
  });
});

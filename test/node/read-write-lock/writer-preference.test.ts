/**
 * Writer preference: once a writer waits, readers that hold nothing yet wait behind it, so a
 * steady stream of readers cannot starve writers; readers that already hold may re-enter; a
 * crashed waiting writer stops blocking readers after the waiter timeout; with the option off,
 * readers keep coming in while a writer waits.
 */
import { describe, expect, it } from "vitest";
import { LockClient, type ReadWriteLockOptions } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../exclusive/testbed.js";
import { crashingAfter } from "../fair-lock/support.js";

describe.each(backendKindsUnderTest())("writer preference on %s", (kind) => {
  const bed = useTestBed(kind);

  /**
   * Three overlapping reader loops, each hold by a fresh owner, until `stop()`; records when
   * each read hold was granted (after its acquire resolved).
   */
  function readerStream(prefix: string, options: ReadWriteLockOptions) {
    let running = true;
    const grantedAt: number[] = [];
    const loops = [0, 1, 2].map(async (index) => {
      const client = new LockClient({
        redis: bed.redis(),
        prefix,
        wait: { initialDelayMs: 5, maxDelayMs: 20, maxPolls: 100_000 },
      });
      const read = client.readWriteLock("stream", options).readLock();
      await sleepMs(index * 30);
      while (running) {
        const held = await read.tryAcquire({ leaseMs: 10_000, waitMs: 200 });
        if (!held) continue;
        grantedAt.push(Date.now());
        await sleepMs(90);
        await held.release();
      }
    });
    return {
      grantedAt,
      async stop() {
        running = false;
        await Promise.all(loops);
      },
    };
  }

  it("lets a writer in through a steady stream of readers, and no new reader passes it", async () => {
    const prefix = freshPrefix();
    const stream = readerStream(prefix, {});
    await until(() => stream.grantedAt.length >= 6);
    const rw = bed.client({ prefix }).readWriteLock("stream");
    const waitStarted = Date.now();
    const writer = rw.writeLock().acquire({ leaseMs: 10_000, waitMs: 5_000 });
    // Registered once its first attempt is answered: from then on no new reader gets in.
    const redis = bed.redis();
    await until(async () => (await redis.zcard(`${prefix}:{stream}:writers`)) === 1);
    const registeredAt = Date.now();
    const held = await writer;
    const acquiredAt = Date.now();
    await sleepMs(50);
    await held.release();
    await stream.stop();
    expect(acquiredAt - waitStarted).toBeLessThan(3_000);
    // A read hold granted after registration but before the writer got in would be a bypass;
    // holds already in flight when the writer registered (answered within a round trip) pass.
    const bypasses = stream.grantedAt.filter((t) => t > registeredAt + 50 && t < acquiredAt);
    expect(bypasses).toEqual([]);
    expect(stream.grantedAt.some((t) => t > acquiredAt)).toBe(true);
  });

  it("still lets a reader that holds re-enter while a writer waits (no deadlock)", async () => {
    const client = bed.client();
    const rw = client.readWriteLock("reenter");
    const read = await rw.readLock().acquire({ leaseMs: 10_000 });
    const writer = rw.writeLock().acquire({ leaseMs: 10_000, waitMs: 10_000 });
    const redis = bed.redis();
    await until(async () => (await redis.zcard(`${client.prefix}:{reenter}:writers`)) === 1);
    expect(await rw.readLock().tryAcquire({ leaseMs: 10_000 })).toBeNull();
    const again = await rw.readLock().acquire({ leaseMs: 10_000, owner: read.owner, waitMs: 0 });
    await again.release();
    await read.release();
    const written = await writer;
    await written.release();
    expect(await redis.zcard(`${client.prefix}:{reenter}:writers`)).toBe(0);
  });

  it("stops deferring to a crashed waiting writer after the waiter timeout", async () => {
    const prefix = freshPrefix();
    const options = { waiterTimeoutMs: 1_000 };
    const rw = bed.client({ prefix }).readWriteLock("crashed", options);
    const read = await rw.readLock().acquire({ leaseMs: 10_000 });
    // Its calls fail from the second on, and it does not ride that out (wait.outageMs 0): its
    // acquire ends at once, as the invocation of a crashed isolate would.
    const dying = new LockClient({
      redis: crashingAfter(bed.redis(), 1),
      prefix,
      retries: 0,
      wait: { outageMs: 0 },
    });
    const attempt = dying
      .readWriteLock("crashed", options)
      .writeLock()
      .acquire({ waitMs: 10_000 })
      .catch((e: unknown) => e);
    const redis = bed.redis();
    await until(async () => (await redis.zcard(`${prefix}:{crashed}:writers`)) === 1);
    const registeredAt = Date.now();
    await attempt;
    expect(await rw.readLock().tryAcquire({ leaseMs: 10_000 })).toBeNull();
    const late = await rw.readLock().acquire({ leaseMs: 10_000, waitMs: 5_000 });
    expect(Date.now() - registeredAt).toBeLessThan(2_500);
    await late.release();
    await read.release();
  });

  it("with writerPreference: false, readers keep coming in while a writer waits", async () => {
    const prefix = freshPrefix();
    const options = { writerPreference: false };
    const stream = readerStream(prefix, options);
    await until(() => stream.grantedAt.length >= 6);
    const rw = bed.client({ prefix }).readWriteLock("stream", options);
    const waitStarted = Date.now();
    const writer = await rw.writeLock().tryAcquire({ leaseMs: 10_000, waitMs: 1_000 });
    const waitEnded = Date.now();
    await writer?.release();
    await stream.stop();
    const admittedWhileWaiting = stream.grantedAt.filter(
      (t) => t > waitStarted + 100 && t < waitEnded,
    );
    expect(admittedWhileWaiting.length).toBeGreaterThan(0);
    expect(await bed.redis().exists(`${prefix}:{stream}:writers`)).toBe(0);
  });
});

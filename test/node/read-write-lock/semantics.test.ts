/**
 * Read-write lock semantics: readers overlap, writers exclude everyone, both re-enter, a writer
 * downgrades, a reader's upgrade fails fast, write holds are fenced and read holds share the
 * current token.
 */
import { describe, expect, it } from "vitest";
import {
  LockClient,
  type LockHandle,
  LockInputError,
  LockNotHeldError,
  LockUpgradeError,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("read-write lock semantics on %s", (kind) => {
  const bed = useTestBed(kind);

  it("lets readers share and keeps writers out until the last reader leaves", async () => {
    const rw = bed.client().readWriteLock("shared");
    const readers = await Promise.all(
      [0, 1, 2].map(() => rw.readLock().tryAcquire({ leaseMs: 10_000 })),
    );
    expect(readers.every((r) => r !== null)).toBe(true);
    expect(await rw.readLock().holdCount()).toBe(3);
    expect(await rw.writeLock().tryAcquire({ leaseMs: 10_000 })).toBeNull();
    for (const reader of readers.slice(0, 2)) await reader?.release();
    expect(await rw.writeLock().tryAcquire({ leaseMs: 10_000 })).toBeNull();
    await readers[2]?.release();
    expect(await rw.readLock().isLocked()).toBe(false);
    const writer = await rw.writeLock().tryAcquire({ leaseMs: 10_000 });
    expect(writer).not.toBeNull();
    expect(await rw.readLock().tryAcquire({ leaseMs: 10_000 })).toBeNull();
    expect(await rw.writeLock().tryAcquire({ leaseMs: 10_000 })).toBeNull();
    await writer?.release();
  });

  it("never lets a writer overlap anyone, while readers do overlap", async () => {
    const prefix = freshPrefix();
    let readers = 0;
    let writers = 0;
    let maxReaders = 0;
    let violations = 0;
    const check = () => {
      if (writers > 1 || (writers === 1 && readers > 0)) violations += 1;
      maxReaders = Math.max(maxReaders, readers);
    };
    async function worker(index: number): Promise<void> {
      const client = new LockClient({
        redis: bed.redis(),
        prefix,
        wait: { initialDelayMs: 5, maxDelayMs: 50, maxPolls: 10_000 },
      });
      const rw = client.readWriteLock("mixed");
      for (let round = 0; round < 6; round++) {
        const writing = (index + round) % 4 === 0;
        const held = await (writing ? rw.writeLock() : rw.readLock()).acquire({
          leaseMs: 10_000,
          waitMs: 60_000,
        });
        if (writing) writers += 1;
        else readers += 1;
        check();
        await sleepMs(5 + Math.random() * 15);
        check();
        if (writing) writers -= 1;
        else readers -= 1;
        await held.release();
      }
    }
    await Promise.all(Array.from({ length: 8 }, (_, i) => worker(i)));
    expect(violations).toBe(0);
    expect(maxReaders).toBeGreaterThan(1);
  });

  it("re-enters both sides, and lets the writer downgrade to a reader", async () => {
    const client = bed.client();
    const rw = client.readWriteLock("downgrade");
    const write = await rw.writeLock().acquire({ leaseMs: 10_000 });
    const owner = write.owner;
    const writeAgain = await rw.writeLock().acquire({ leaseMs: 10_000, owner, waitMs: 0 });
    expect(writeAgain.fencingToken).toBe(write.fencingToken);
    expect(await rw.writeLock().holdCount(owner)).toBe(2);
    await writeAgain.release();

    // The writer takes a read hold, then lets go of the write lock: it keeps reading.
    const read = await rw.readLock().acquire({ leaseMs: 10_000, owner, waitMs: 0 });
    expect(read.fencingToken).toBe(write.fencingToken);
    // While it still writes, others may neither read nor write.
    expect(await rw.readLock().tryAcquire({ leaseMs: 10_000 })).toBeNull();
    await write.release();
    expect(await rw.writeLock().isLocked()).toBe(false);
    expect(await rw.readLock().holdCount(owner)).toBe(1);
    // Now another reader joins, a writer does not.
    const other = await rw.readLock().tryAcquire({ leaseMs: 10_000 });
    expect(other).not.toBeNull();
    expect(await rw.writeLock().tryAcquire({ leaseMs: 10_000 })).toBeNull();
    const readAgain = await rw.readLock().acquire({ leaseMs: 10_000, owner, waitMs: 0 });
    expect(await rw.readLock().holdCount(owner)).toBe(2);
    await readAgain.release();
    await read.release();
    await other?.release();
    const next = await rw.writeLock().tryAcquire({ leaseMs: 10_000 });
    expect(next?.fencingToken).toBe(write.fencingToken + 1);
    await next?.release();
  });

  it("fails an upgrade at once, in one request, without blocking other readers", async () => {
    const client = bed.client();
    const rw = client.readWriteLock("upgrade");
    const read = await rw.readLock().acquire({ leaseMs: 10_000 });
    const before = bed.requests();
    const started = Date.now();
    const error = await rw
      .writeLock()
      .acquire({ owner: read.owner, waitMs: 10_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockUpgradeError);
    expect((error as Error).name).toBe("LockUpgradeError");
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(bed.requests() - before).toBe(1);
    await expect(rw.writeLock().tryAcquire({ owner: read.owner })).rejects.toBeInstanceOf(
      LockUpgradeError,
    );
    // The failed upgrade registered no waiting writer: new readers still get in.
    const other = await rw.readLock().tryAcquire({ leaseMs: 10_000 });
    expect(other).not.toBeNull();
    await other?.release();
    await read.release();
    // With its read holds gone, the same owner may write.
    const write = await rw.writeLock().acquire({ owner: read.owner, waitMs: 0 });
    await write.release();
  });

  it("fences write holds; read holds carry the last writer's token", async () => {
    const rw = bed.client().readWriteLock("fenced");
    const tokens: number[] = [];
    const first = await rw.readLock().acquire({ leaseMs: 10_000 });
    tokens.push(first.fencingToken);
    await first.release();
    for (let i = 0; i < 3; i++) {
      const write = await rw.writeLock().acquire({ leaseMs: 10_000 });
      tokens.push(write.fencingToken);
      await write.release();
      const read = await rw.readLock().acquire({ leaseMs: 10_000 });
      tokens.push(read.fencingToken);
      await read.release();
    }
    expect(tokens).toEqual([0, 1, 1, 2, 2, 3, 3]);
  });

  it("releases without a handle, force-releases each side, and checks its input", async () => {
    const client = bed.client();
    const rw = client.readWriteLock("admin");
    const read: LockHandle = await rw.readLock().acquire({ leaseMs: 10_000 });
    await rw.readLock().release({ owner: read.owner });
    await expect(rw.readLock().release({ owner: read.owner })).rejects.toBeInstanceOf(
      LockNotHeldError,
    );
    await expect(read.release()).rejects.toBeInstanceOf(LockNotHeldError);

    await rw.readLock().acquire({ leaseMs: 10_000 });
    expect(await rw.readLock().forceRelease()).toBe(true);
    expect(await rw.readLock().forceRelease()).toBe(false);
    const write = await rw.writeLock().acquire({ leaseMs: 10_000 });
    expect(await rw.writeLock().remainingTtl()).toBeGreaterThan(9_000);
    expect(await rw.writeLock().forceRelease()).toBe(true);
    await expect(write.release()).rejects.toBeInstanceOf(LockNotHeldError);

    const before = bed.requests();
    expect(() => client.readWriteLock("x", { writerPreference: "yes" } as never)).toThrow(
      LockInputError,
    );
    expect(() => client.readWriteLock("x", { waiterTimeoutMs: 5 })).toThrow(LockInputError);
    expect(() => client.readWriteLock("{x}")).toThrow(LockInputError);
    await expect(rw.readLock().acquire({ leaseMs: 5 })).rejects.toBeInstanceOf(LockInputError);
    expect(bed.requests()).toBe(before);
  });
});

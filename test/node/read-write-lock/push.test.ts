/**
 * Push hand-off on the write lock (`wait: { mode: "push" }`): a waiting writer parks, queued in
 * arrival order, and the release that frees the lock (the writer's, or the last live read hold's)
 * hands it over inside Redis. Real redis-server and the embedded engine behind the local REST
 * server, the real @upstash/redis client.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  type LockClient,
  LockNotHeldError,
  LockWaitTimeoutError,
  type WaitOptions,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import {
  freshPrefix,
  sleepMs,
  until,
  useTestBed,
  wakeListsWithNone,
} from "../exclusive/testbed.js";
import {
  abortedHeadSkipped,
  concurrentAcquisitionsOfOneOwner,
  forceReleaseHandsOver,
  grantBeforeAttemptAnswer,
  lateGrantNotTrusted,
  type ParkingKind,
} from "../wait/push/push-scenarios.js";

const PUSH = { mode: "push" } as const;

/**
 * Issue 41, case 8: a live reader (10 s lease) and a crashed one (1.5 s) hold; a writer parks
 * bounded by the last read lease end (10 s, so by `parkMs`, 5 s); the live reader releases at
 * once. The writer must hold soon after the crashed reader's lease ends, not when its park ends
 * (3.5 s of a free lock): that release re-times its park. `client` makes the clients of one
 * channel (a pop, or a subscription).
 */
async function writerRetimedByReadRelease(
  client: (prefix: string, wait?: WaitOptions) => LockClient,
  parkedWriter: (prefix: string) => Promise<boolean>,
): Promise<void> {
  const prefix = freshPrefix();
  const crashedLeaseMs = 1_500;
  const rw = client(prefix).readWriteLock("doc");
  const live = await rw.readLock().acquire({ leaseMs: 10_000 });
  const crashedAt = Date.now();
  await rw.readLock().acquire({ leaseMs: crashedLeaseMs }); // its holder dies: never released
  const writer = client(prefix, PUSH).readWriteLock("doc").writeLock();
  let heldAt = 0;
  const waiting = writer.acquire({ leaseMs: 10_000, waitMs: 20_000 }).then((handle) => {
    heldAt = Date.now();
    return handle;
  });
  await until(() => parkedWriter(prefix));
  await sleepMs(100);
  await live.release();
  const handle = await waiting;
  // From the crashed reader's lease end (client clock: it ends no earlier than this).
  const idleMs = heldAt - (crashedAt + crashedLeaseMs);
  expect(idleMs).toBeLessThan(700);
  expect(await writer.holdCount(handle.owner)).toBe(1);
  await handle.release();
}
const WRITE_LOCK: ParkingKind = {
  name: "doc",
  lockOf: (client) => client.readWriteLock("doc").writeLock(),
};

describe.each(backendKindsUnderTest())("write lock push hand-off on %s", (kind) => {
  // Parks block only where the backend's pops do: a Redis behind a REST proxy.
  const bed = useTestBed(kind, { profile: "redis" });
  afterEach(() => bed.server.faults.disable());
  const lockCommands = () => bed.lockCommands();
  const parkedWriters = (prefix: string) => bed.redis().hlen(`${prefix}:{doc}:parked`);

  it("a writer's release hands the lock to the parked writer, with the next fencing token", async () => {
    const prefix = freshPrefix();
    const first = bed.client({ prefix }).readWriteLock("doc").writeLock();
    const second = bed.client({ prefix, wait: PUSH }).readWriteLock("doc").writeLock();
    const held = await first.acquire({ leaseMs: 10_000 });
    const waiting = second.acquire({ leaseMs: 10_000 });
    await until(async () => (await parkedWriters(prefix)) === 1);
    await sleepMs(50);
    const before = bed.requests();
    await held.release();
    const handle = await waiting;
    // The release handed over: the parked writer sent nothing more.
    expect(bed.requests() - before).toBe(1);
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    expect(await second.holdCount(handle.owner)).toBe(1);
    await handle.release();
    expect(await second.isLocked()).toBe(false);
    // The hand-off ended the writer's wait: once it released, readers are not held back by it.
    const read = await bed.client({ prefix }).readWriteLock("doc").readLock().tryAcquire();
    expect(read).not.toBeNull();
    await read?.release();
  });

  it("the last read hold's release hands the lock to the parked writer", async () => {
    const prefix = freshPrefix();
    const rw = bed.client({ prefix }).readWriteLock("doc");
    const writer = bed.client({ prefix, wait: PUSH }).readWriteLock("doc").writeLock();
    const reads = await Promise.all([
      rw.readLock().acquire({ leaseMs: 10_000 }),
      rw.readLock().acquire({ leaseMs: 10_000 }),
    ]);
    const waiting = writer.acquire({ leaseMs: 10_000 });
    await until(async () => (await parkedWriters(prefix)) === 1);
    // One read hold left: nothing is handed over yet.
    await reads[0]?.release();
    await sleepMs(100);
    expect(await writer.isLocked()).toBe(false);
    expect(await parkedWriters(prefix)).toBe(1);
    const before = bed.requests();
    await reads[1]?.release();
    const handle = await waiting;
    expect(bed.requests() - before).toBe(1);
    expect(await writer.holdCount(handle.owner)).toBe(1);
    // Writer preference: a new reader waits behind the writer's hold.
    expect(await rw.readLock().tryAcquire({ leaseMs: 10_000 })).toBeNull();
    await handle.release();
    // The hand-off ended the writer's wait: readers are not held back by it once it released.
    expect(await bed.redis().zcard(`${prefix}:{doc}:writers`)).toBe(0);
    const read = await rw.readLock().tryAcquire({ leaseMs: 10_000 });
    expect(read).not.toBeNull();
    await read?.release();
  });

  it("writers parked behind a read hold are handed the lock one after the other (the first's hold, handed over by the read release, is timed)", async () => {
    const prefix = freshPrefix();
    const read = await bed
      .client({ prefix })
      .readWriteLock("doc")
      .readLock()
      .acquire({ leaseMs: 30_000 });
    // Parks far longer than the test's bound: only a hand-off ends them in time.
    const writerOf = () =>
      bed
        .client({ prefix, wait: { mode: "push", parkMs: 30_000 } })
        .readWriteLock("doc")
        .writeLock();
    const [first, second] = [writerOf(), writerOf()];
    const firstWaiting = first.acquire({ leaseMs: 30_000, waitMs: 60_000 });
    await until(async () => (await parkedWriters(prefix)) === 1);
    const secondWaiting = second.acquire({ leaseMs: 30_000, waitMs: 60_000 });
    await until(async () => (await parkedWriters(prefix)) === 2);
    await read.release();
    const firstHeld = await firstWaiting;
    await sleepMs(50);
    const before = bed.requests();
    await firstHeld.release();
    // The first writer's release hands over (an untimed hold would free on the fast path, and
    // the second writer would sleep on to its park's end, 30 s).
    const secondHeld = await Promise.race([secondWaiting, sleepMs(5_000).then(() => null)]);
    expect(secondHeld, "the second writer was not handed the lock").not.toBeNull();
    expect(bed.requests() - before).toBe(1);
    expect(secondHeld?.fencingToken).toBe(firstHeld.fencingToken + 1);
    await secondHeld?.release();
  });

  it("a writer that downgraded hands over only when its read hold ends too", async () => {
    const prefix = freshPrefix();
    const rw = bed.client({ prefix }).readWriteLock("doc");
    const writer = bed.client({ prefix, wait: PUSH }).readWriteLock("doc").writeLock();
    const write = await rw.writeLock().acquire({ leaseMs: 10_000 });
    const read = await rw.readLock().acquire({ leaseMs: 10_000, owner: write.owner });
    const waiting = writer.acquire({ leaseMs: 10_000 });
    await until(async () => (await parkedWriters(prefix)) === 1);
    // The write lock is released, the read hold is live: no hand-off.
    await write.release();
    await sleepMs(100);
    expect(await writer.isLocked()).toBe(false);
    expect(await rw.readLock().holdCount(write.owner)).toBe(1);
    await read.release();
    const handle = await waiting;
    expect(handle.fencingToken).toBe(write.fencingToken + 1);
    expect(await rw.readLock().isLocked()).toBe(false);
    await handle.release();
  });

  it("parked writers are handed the lock in arrival order, attempt + park + release each (+ a park after word of the hand-off ahead)", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix }).readWriteLock("doc").writeLock();
    const writers = [0, 1, 2].map(() =>
      bed.client({ prefix, wait: PUSH }).readWriteLock("doc").writeLock(),
    );
    const held = await holder.acquire({ leaseMs: 10_000 });
    const before = lockCommands();
    const order: number[] = [];
    const runs: Promise<void>[] = [];
    for (const [index, writer] of writers.entries()) {
      runs.push(
        (async () => {
          const handle = await writer.acquire({ leaseMs: 10_000 });
          order.push(index);
          await sleepMs(20);
          await handle.release();
        })(),
      );
      await until(async () => (await parkedWriters(prefix)) === index + 1);
    }
    await held.release();
    await Promise.all(runs);
    expect(order).toEqual([0, 1, 2]);
    // And one park again for each of the two writers told that the lock went to the writer
    // ahead (no hold statistics yet: their parks were bounded by the holder's 10 s lease).
    expect(lockCommands() - before).toBe(3 * 3 + 1 + 2);
  });

  it("after a wait, a writer's park goes out beside its attempt and is woken at once when the lock is free", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix }).readWriteLock("doc").writeLock();
    const writer = bed.client({ prefix, wait: PUSH }).readWriteLock("doc").writeLock();
    const held = await holder.acquire({ leaseMs: 10_000 });
    const waiting = writer.acquire({ leaseMs: 10_000 });
    await until(async () => (await parkedWriters(prefix)) === 1);
    await held.release();
    await (await waiting).release();
    // The lock is free: the attempt takes it and wakes the park sent beside it (5 s otherwise).
    const before = lockCommands();
    const handle = await writer.acquire({ leaseMs: 10_000 });
    await until(() => lockCommands() - before === 2, 2_000);
    // (A grant's second copy, kept for a re-sent pop, lives out its claim window.)
    expect(await wakeListsWithNone(bed, `${prefix}:{doc}`)).toEqual([]);
    await handle.release();
  });

  it("a grant that comes back before the writer's attempt answers is taken at once", () =>
    grantBeforeAttemptAnswer(bed, WRITE_LOCK));

  it("a grant that reaches a parked writer after its claim window is not trusted", () =>
    lateGrantNotTrusted(bed, WRITE_LOCK));

  it("concurrent write acquisitions of one owner both hold after one hand-off", () =>
    concurrentAcquisitionsOfOneOwner(bed, WRITE_LOCK));

  it("the write lock's forceRelease() hands the lock to the parked writer", () =>
    forceReleaseHandsOver(bed, WRITE_LOCK));

  it("the read lock's forceRelease() hands the lock to the parked writer, unless a writer holds it", async () => {
    const prefix = freshPrefix();
    const rw = bed.client({ prefix }).readWriteLock("doc");
    const writer = bed
      .client({ prefix, wait: { mode: "push", parkMs: 30_000 } })
      .readWriteLock("doc")
      .writeLock();
    const reads = await Promise.all([
      rw.readLock().acquire({ leaseMs: 30_000 }),
      bed.client({ prefix }).readWriteLock("doc").readLock().acquire({ leaseMs: 30_000 }),
    ]);
    const waiting = writer.acquire({ leaseMs: 10_000 });
    await until(async () => (await parkedWriters(prefix)) === 1);
    await sleepMs(50);
    const before = bed.requests();
    expect(await rw.readLock().forceRelease()).toBe(true);
    const handle = await Promise.race([waiting, sleepMs(10_000).then(() => null)]);
    expect(handle, "the parked writer was not handed the lock").not.toBeNull();
    expect(bed.requests() - before).toBe(1);
    expect(await writer.holdCount(handle?.owner ?? "")).toBe(1);
    expect(await bed.redis().zcard(`${prefix}:{doc}:writers`)).toBe(0);

    // With a write hold (a writer that downgraded keeps one beside its read hold), dropping the
    // read holds hands nothing over: the lock is not free.
    const next = bed.client({ prefix, wait: PUSH }).readWriteLock("doc").writeLock();
    const read = await rw.readLock().acquire({ leaseMs: 30_000, owner: handle?.owner ?? "" });
    const nextWaiting = next.acquire({ leaseMs: 10_000 });
    await until(async () => (await parkedWriters(prefix)) === 1);
    expect(await rw.readLock().forceRelease()).toBe(true);
    await sleepMs(100);
    expect(await writer.holdCount(handle?.owner ?? "")).toBe(1);
    expect(await parkedWriters(prefix)).toBe(1);
    void read;
    await handle?.release();
    await (await nextWaiting).release();
    for (const hold of reads) await expect(hold.release()).rejects.toThrow(LockNotHeldError);
  });

  it("a parked writer that gives up leaves the queue and its registration", async () => {
    const prefix = freshPrefix();
    const rw = bed.client({ prefix }).readWriteLock("doc");
    const writer = bed.client({ prefix, wait: PUSH }).readWriteLock("doc").writeLock();
    const held = await rw.writeLock().acquire({ leaseMs: 10_000 });
    await expect(writer.acquire({ leaseMs: 10_000, waitMs: 300 })).rejects.toThrow(
      LockWaitTimeoutError,
    );
    expect(await parkedWriters(prefix)).toBe(0);
    expect(await bed.redis().zcard(`${prefix}:{doc}:queue`)).toBe(0);
    expect(await bed.redis().zcard(`${prefix}:{doc}:writers`)).toBe(0);
    await held.release();
    // Nothing was handed to the writer that left.
    expect(await rw.writeLock().isLocked()).toBe(false);
  });

  it("an aborted parked writer at the head is skipped: the release hands the lock to the writer behind", () =>
    abortedHeadSkipped(bed, WRITE_LOCK, false));

  it("a writer aborted as the release comes passes its grant on to the writer behind", () =>
    abortedHeadSkipped(bed, WRITE_LOCK, true));

  it("a read release that moves the last read end earlier re-times the parked writer's park", () =>
    writerRetimedByReadRelease(
      (prefix, wait) => bed.client({ prefix, ...(wait ? { wait } : {}) }),
      async (prefix) => (await parkedWriters(prefix)) === 1,
    ));
});

describe.each(backendKindsUnderTest())("write lock push over a subscription on %s", (kind) => {
  const bed = useTestBed(kind, { profile: "upstash" });

  it("a read release that moves the last read end earlier re-times the listening writer's park", () =>
    writerRetimedByReadRelease(
      (prefix, wait) =>
        bed.client({
          prefix,
          scriptKeyLocking: true,
          ...(wait ? { wait: { ...wait, wakeBy: "subscription" } } : {}),
        }),
      async (prefix) => {
        const parked = await bed.redis().hgetall<Record<string, string>>(`${prefix}:{doc}:parked`);
        return Object.values(parked ?? {}).some((value) => / sub\d+\.\d+$/.test(String(value)));
      },
    ));
});

/**
 * First come, first served: contenders that queue in a known order acquire in that order; a
 * crashed waiter is skipped within the waiter timeout; waiters that give up leave the queue;
 * a single attempt never queues.
 */
import { describe, expect, it } from "vitest";
import {
  LockAbortedError,
  LockBudgetExceededError,
  LockClient,
  type LockHandle,
  LockInputError,
  LockNotHeldError,
  LockWaitTimeoutError,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { tapped } from "../../support/tapped-redis.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../exclusive/testbed.js";
import { crashingAfter, pausedAfter } from "./support.js";

describe.each(backendKindsUnderTest())("fair lock order on %s", (kind) => {
  const bed = useTestBed(kind);

  /** Starts `count` waiters one after the other, each once the previous one is queued. */
  async function queueInOrder(
    client: LockClient,
    name: string,
    count: number,
    start: (index: number) => Promise<unknown>,
  ): Promise<Promise<unknown>[]> {
    const lock = client.fairLock(name);
    const waiters: Promise<unknown>[] = [];
    for (let i = 0; i < count; i++) {
      waiters.push(start(i));
      await until(async () => (await lock.queueLength()) === i + 1);
    }
    return waiters;
  }

  it("hands the lock to contenders in the order they queued", async () => {
    const prefix = freshPrefix();
    const holderClient = bed.client({ prefix });
    const holder = await holderClient.fairLock("fifo").acquire({ leaseMs: 30_000 });
    const order: number[] = [];
    let inside = 0;
    let overlaps = 0;
    const waiters = await queueInOrder(holderClient, "fifo", 6, async (i) => {
      // Each contender in a client of its own, as if in another isolate.
      const client = bed.client({ prefix, wait: { maxPolls: 10_000 } });
      const held = await client.fairLock("fifo").acquire({ leaseMs: 30_000, waitMs: 30_000 });
      inside += 1;
      if (inside > 1) overlaps += 1;
      order.push(i);
      await sleepMs(10 + Math.random() * 20);
      inside -= 1;
      await held.release();
    });
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    expect(overlaps).toBe(0);
    expect(await holderClient.fairLock("fifo").queueLength()).toBe(0);
  });

  it("skips a crashed waiter within the waiter timeout", async () => {
    const prefix = freshPrefix();
    const waiterTimeoutMs = 1_000;
    const holderClient = bed.client({ prefix });
    const holder = await holderClient.fairLock("crash").acquire({ leaseMs: 30_000 });
    const order: number[] = [];
    let acquiredAt = 0;
    const waiters = await queueInOrder(holderClient, "crash", 3, async (i) => {
      // Waiter 1 queues with its first request and then its isolate dies.
      const redis = i === 1 ? crashingAfter(bed.redis(), 1) : bed.redis();
      const client = new LockClient({ redis, prefix, retries: 0 });
      try {
        const held = await client
          .fairLock("crash", { waiterTimeoutMs })
          .acquire({ leaseMs: 30_000, waitMs: 20_000 });
        order.push(i);
        if (i === 2) acquiredAt = Date.now();
        await held.release();
      } catch (error) {
        if (i !== 1) throw error;
      }
    });
    const releasedAt = Date.now();
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 2]);
    // Waiter 2 waited for the dead waiter 1 no longer than its timeout (plus polling slack).
    expect(acquiredAt - releasedAt).toBeLessThan(waiterTimeoutMs + 1_500);
    expect(await holderClient.fairLock("crash").queueLength()).toBe(0);
  });

  it("lets a waiter that gives up leave the queue: timeout, abort, poll budget", async () => {
    const client = bed.client();
    const lock = client.fairLock("give-up");
    const holder = await lock.acquire({ leaseMs: 30_000 });

    const timedOut = lock.acquire({ waitMs: 300 }).catch((e: unknown) => e);
    await until(async () => (await lock.queueLength()) === 1);
    expect(await timedOut).toBeInstanceOf(LockWaitTimeoutError);
    expect(await lock.queueLength()).toBe(0);

    const controller = new AbortController();
    const aborted = lock.acquire({ signal: controller.signal }).catch((e: unknown) => e);
    await until(async () => (await lock.queueLength()) === 1);
    controller.abort();
    expect(await aborted).toBeInstanceOf(LockAbortedError);
    expect(await lock.queueLength()).toBe(0);

    const broke = await lock
      .acquire({ wait: { maxPolls: 3, initialDelayMs: 5, maxDelayMs: 5 } })
      .catch((e: unknown) => e);
    expect(broke).toBeInstanceOf(LockBudgetExceededError);
    expect(await lock.queueLength()).toBe(0);

    expect(await lock.tryAcquire({ waitMs: 200 })).toBeNull();
    expect(await lock.queueLength()).toBe(0);
    await holder.release();
  });

  it("never queues a single attempt, and a single attempt does not jump the queue", async () => {
    const client = bed.client();
    const lock = client.fairLock("one-shot");
    const holder = await lock.acquire({ leaseMs: 30_000 });
    expect(await lock.tryAcquire()).toBeNull();
    expect(await lock.tryAcquire({ waitMs: 0 })).toBeNull();
    expect(await lock.acquire({ waitMs: 0 }).catch((e: unknown) => e)).toBeInstanceOf(
      LockWaitTimeoutError,
    );
    expect(await lock.queueLength()).toBe(0);

    // A waiter queues; the holder leaves; until the waiter's next poll the lock is free, but a
    // newcomer's single attempt must not take it from the head of the queue.
    const paused = pausedAfter(bed.redis(), 1);
    const slow = new LockClient({ redis: paused.redis, prefix: client.prefix });
    const waiter = slow.fairLock("one-shot").acquire({ leaseMs: 30_000 });
    await until(async () => (await lock.queueLength()) === 1);
    await holder.release();
    expect(await lock.isLocked()).toBe(false);
    expect(await lock.tryAcquire()).toBeNull();
    paused.open();
    const next = await waiter;
    expect(await lock.tryAcquire()).toBeNull();
    await next.release();
    const free = await lock.tryAcquire();
    expect(free).not.toBeNull();
    await free?.release();
  });

  it("re-enters for the same owner, fences new holders, and extends like a lock", async () => {
    const client = bed.client();
    const lock = client.fairLock("reentrant");
    const outer = await lock.acquire({ leaseMs: 5_000 });
    const inner = await lock.acquire({ leaseMs: 5_000, owner: outer.owner, waitMs: 0 });
    expect(inner.fencingToken).toBe(outer.fencingToken);
    expect(await lock.holdCount(outer.owner)).toBe(2);
    await inner.extend(8_000);
    expect(await lock.remainingTtl()).toBeGreaterThan(6_000);
    await inner.release();
    await lock.release({ owner: outer.owner });
    expect(await lock.isLocked()).toBe(false);
    await expect(outer.release()).rejects.toBeInstanceOf(LockNotHeldError);
    const next: LockHandle = await lock.acquire({ leaseMs: 5_000 });
    expect(next.fencingToken).toBe(outer.fencingToken + 1);
    await next.release();
  });

  it("rejects bad options before any request", async () => {
    const client = bed.client();
    const before = bed.requests();
    expect(() => client.fairLock("x", { waiterTimeoutMs: 10 })).toThrow(LockInputError);
    expect(() => client.fairLock("x", { waiterTimeout: 1_000 } as never)).toThrow(LockInputError);
    await expect(client.fairLock("x").acquire({ waitMs: -1 })).rejects.toBeInstanceOf(
      LockInputError,
    );
    await expect(client.fairLock("x").acquire({ wait: { maxPolls: 0 } })).rejects.toBeInstanceOf(
      LockInputError,
    );
    expect(bed.requests()).toBe(before);
  });
});

describe.each(backendKindsUnderTest())("fair lock order over a subscription on %s", (kind) => {
  const bed = useTestBed(kind, { profile: "upstash" });

  /** Registrations in the parked hash that listen on a hand-off channel. */
  async function subscribedWaiters(prefix: string, name: string): Promise<number> {
    const parked = await bed.redis().hgetall<Record<string, string>>(`${prefix}:{${name}}:parked`);
    return Object.values(parked ?? {}).filter((value) => / sub\d+\.\d+$/.test(String(value)))
      .length;
  }

  it("a waiter whose grant word was lost keeps its place: served first, with its granted token", async () => {
    const prefix = freshPrefix();
    const holderClient = bed.client({ prefix, scriptKeyLocking: true });
    const held = await holderClient.fairLock("fifo").acquire({ leaseMs: 10_000 });
    const order: { label: string; fencingToken: number; at: number }[] = [];
    const taps = ["W1", "W2", "W3"].map((label) => ({ label, ...tapped(bed.redis()) }));
    const served: Promise<void>[] = [];
    for (const [index, { label, redis }] of taps.entries()) {
      const client = bed.client({
        prefix,
        redis,
        scriptKeyLocking: true,
        wait: { mode: "push", wakeBy: "subscription" },
      });
      served.push(
        client
          .fairLock("fifo")
          .acquire({ leaseMs: 10_000, waitMs: 20_000 })
          .then(async (handle) => {
            order.push({ label, fencingToken: handle.fencingToken, at: Date.now() });
            await sleepMs(50);
            await handle.release();
          }),
      );
      await until(async () => (await subscribedWaiters(prefix, "fifo")) === index + 1);
    }
    // W1's word never reaches it: it must learn of its grant by asking again in time.
    const first = taps[0];
    if (first === undefined) throw new Error("no first waiter");
    first.tap.dropWords = true;
    const releasedAt = Date.now();
    await held.release();
    await Promise.all(served);
    expect(first.tap.words).toBeGreaterThanOrEqual(1);
    // Served in queue order, W1 with the token its grant carried (the release's: the next one).
    expect(order.map(({ label }) => label)).toEqual(["W1", "W2", "W3"]);
    expect(order[0]?.fencingToken).toBe(held.fencingToken + 1);
    // Within the grant's claim window (2 s), not after its park's full length and the queue.
    expect((order[0]?.at ?? Number.POSITIVE_INFINITY) - releasedAt).toBeLessThan(2_000);
  });
  it("a waiter that became the head untold keeps its place when its grant word is lost", async () => {
    // Issue 41 (the long chaos run): W2 parked behind W1 for its whole park (5 s); W1 gave up,
    // so the release granted W2, whose word was lost: its grant lapsed (2 s) before W2 asked.
    const prefix = freshPrefix();
    const holderClient = bed.client({ prefix, scriptKeyLocking: true });
    const held = await holderClient.fairLock("fifo-untold").acquire({ leaseMs: 10_000 });
    const w1 = new AbortController();
    const taps = ["W1", "W2", "W3"].map((label) => ({ label, ...tapped(bed.redis()) }));
    const order: { label: string; fencingToken: number; at: number }[] = [];
    const served: Promise<void>[] = [];
    for (const [index, { label, redis }] of taps.entries()) {
      const client = bed.client({
        prefix,
        redis,
        scriptKeyLocking: true,
        wait: { mode: "push", wakeBy: "subscription" },
      });
      served.push(
        client
          .fairLock("fifo-untold")
          .acquire({
            leaseMs: 10_000,
            waitMs: 20_000,
            ...(label === "W1" ? { signal: w1.signal } : {}),
          })
          .then(
            async (handle) => {
              order.push({ label, fencingToken: handle.fencingToken, at: Date.now() });
              await sleepMs(50);
              await handle.release();
            },
            (error: unknown) => {
              if (label !== "W1") throw error;
            },
          ),
      );
      await until(async () => (await subscribedWaiters(prefix, "fifo-untold")) === index + 1);
    }
    w1.abort();
    await until(async () => (await subscribedWaiters(prefix, "fifo-untold")) === 2);
    const second = taps[1];
    if (second === undefined) throw new Error("no second waiter");
    second.tap.dropWords = true;
    const releasedAt = Date.now();
    await held.release();
    await Promise.all(served);
    expect(second.tap.words).toBeGreaterThanOrEqual(1);
    expect(order.map(({ label }) => label)).toEqual(["W2", "W3"]);
    expect(order[0]?.fencingToken).toBe(held.fencingToken + 1);
    expect((order[0]?.at ?? Number.POSITIVE_INFINITY) - releasedAt).toBeLessThan(2_000);
  });
  it("a waiter with a lease shorter than the claim window keeps its place when its grant word is lost", async () => {
    // The grant lasts the waiter's own lease (400 ms) when that is shorter than the claim window
    // (2 s): a park bounded by the claim window alone outlasted it.
    const prefix = freshPrefix();
    const holderClient = bed.client({ prefix, scriptKeyLocking: true });
    const held = await holderClient.fairLock("fifo-short").acquire({ leaseMs: 10_000 });
    const taps = ["W1", "W2"].map((label) => ({ label, ...tapped(bed.redis()) }));
    const order: { label: string; fencingToken: number }[] = [];
    const served: Promise<void>[] = [];
    for (const [index, { label, redis }] of taps.entries()) {
      const client = bed.client({
        prefix,
        redis,
        scriptKeyLocking: true,
        wait: { mode: "push", wakeBy: "subscription" },
      });
      served.push(
        client
          .fairLock("fifo-short")
          .acquire({ leaseMs: label === "W1" ? 400 : 10_000, waitMs: 20_000 })
          .then(async (handle) => {
            order.push({ label, fencingToken: handle.fencingToken });
            await handle.release();
          }),
      );
      await until(async () => (await subscribedWaiters(prefix, "fifo-short")) === index + 1);
    }
    const first = taps[0];
    if (first === undefined) throw new Error("no first waiter");
    first.tap.dropWords = true;
    await held.release();
    await Promise.all(served);
    expect(first.tap.words).toBeGreaterThanOrEqual(1);
    expect(order).toEqual([
      { label: "W1", fencingToken: held.fencingToken + 1 },
      { label: "W2", fencingToken: held.fencingToken + 2 },
    ]);
  });
});

/**
 * Push hand-off (`wait: { mode: "push" }`): a waiter parks on a blocking pop and the holder's
 * release hands the lock to it inside Redis. Real redis-server and the embedded engine behind the
 * local REST server, the real @upstash/redis client.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  LockAbortedError,
  LockClient,
  type LockClientOptions,
  LockInputError,
  LockWaitTimeoutError,
  type RedisLike,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, until, useTestBed } from "./testbed.js";

const PUSH = { mode: "push" } as const;

/** A Redis client whose process "dies" once it has parked: every later request hangs. */
function dyingAfterPark(redis: RedisLike & { exec: NonNullable<RedisLike["exec"]> }): RedisLike {
  let dead = false;
  const hang = () => new Promise<never>(() => {});
  return {
    eval: (script, keys, args) => (dead ? hang() : redis.eval(script, keys, args)),
    evalsha: (sha, keys, args) => (dead ? hang() : redis.evalsha(sha, keys, args)),
    exec: () => {
      dead = true;
      return hang();
    },
  };
}

describe.each(backendKindsUnderTest())("push hand-off on %s", (kind) => {
  const bed = useTestBed(kind);
  afterEach(() => bed.server.faults.disable());
  /** Scripts and blocking pops the server ran: every request a lock makes. */
  const lockCommands = () => {
    const { eval: evals = 0, evalsha = 0, blpop = 0 } = bed.server.stats.snapshot().commandsByName;
    return evals + evalsha + blpop;
  };

  it("wakes a parked waiter already holding the lock, with the next fencing token", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: PUSH });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const waiting = waiter.lock("job").acquire({ leaseMs: 10_000 });
    // The waiter has registered and parked: its blocking pop is open at the server.
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    await sleepMs(50);
    const before = bed.requests();
    await held.release();
    const handle = await waiting;
    // The release handed the lock over: no further request of the waiter's was needed.
    expect(bed.requests() - before).toBe(1);
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    expect(await waiter.lock("job").isLocked()).toBe(true);
    expect(await holder.lock("job").holdCount(handle.owner)).toBe(1);
    await handle.release();
    expect(await waiter.lock("job").isLocked()).toBe(false);
  });

  it("costs attempt + park + release per contended acquisition", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiters = [0, 1, 2].map(() => bed.client({ prefix, wait: PUSH }));
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const before = lockCommands();
    const order: number[] = [];
    const runs = waiters.map(async (client, index) => {
      const handle = await client.lock("job").acquire({ leaseMs: 10_000 });
      order.push(index);
      await sleepMs(20);
      await handle.release();
    });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 3);
    await held.release();
    await Promise.all(runs);
    // Each waiter: one attempt (which registered it), one park, one release; and the holder's
    // release.
    expect(lockCommands() - before).toBe(3 * 3 + 1);
    expect(order.sort()).toEqual([0, 1, 2]);
  });

  it("a parked waiter whose answer is lost still acquires exactly once (its attempt replays)", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: { mode: "push", parkMs: 400 } });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    // The grant is popped, and its answer lost: @upstash/redis re-sends the pop, which finds
    // nothing; the park ends and the next attempt replays the hand-off's operation record.
    bed.server.faults.configure({ dropAfterExecute: 1, commands: ["blpop"], maxFaults: 1 });
    const waiting = waiter.lock("job").acquire({ leaseMs: 10_000 });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    await sleepMs(50);
    await held.release();
    const handle = await waiting;
    expect(bed.server.faults.counts().dropAfterExecute).toBe(1);
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    expect(await waiter.lock("job").holdCount(handle.owner)).toBe(1);
    // The replay re-armed the waiter's own lease (not the claim window).
    expect(await bed.redis().pttl(`${prefix}:{job}`)).toBeGreaterThan(5_000);
    await handle.release();
    expect(await waiter.lock("job").isLocked()).toBe(false);
  });

  it("aborting a parked waiter leaves the queue: the next release hands nothing to it", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: PUSH });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const abort = new AbortController();
    const waiting = waiter.lock("job").acquire({ leaseMs: 10_000, signal: abort.signal });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    const abortedAt = Date.now();
    abort.abort();
    await expect(waiting).rejects.toBeInstanceOf(LockAbortedError);
    expect(Date.now() - abortedAt).toBeLessThan(2_000);
    expect(await bed.redis().hlen(`${prefix}:{job}:parked`)).toBe(0);
    expect(await bed.redis().zcard(`${prefix}:{job}:queue`)).toBe(0);
    await held.release();
    expect(await holder.lock("job").isLocked()).toBe(false);
  });

  it("a parked waiter gives up at its waitMs and leaves the queue", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: PUSH });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const startedAt = Date.now();
    await expect(
      waiter.lock("job").acquire({ leaseMs: 10_000, waitMs: 300 }),
    ).rejects.toBeInstanceOf(LockWaitTimeoutError);
    expect(Date.now() - startedAt).toBeLessThan(3_000);
    expect(await bed.redis().hlen(`${prefix}:{job}:parked`)).toBe(0);
    await held.release();
    expect(await holder.lock("job").isLocked()).toBe(false);
  });

  it("tryAcquire() with push mode makes one attempt and never parks", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: PUSH });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const before = lockCommands();
    expect(await waiter.lock("job").tryAcquire({ leaseMs: 10_000 })).toBeNull();
    expect(lockCommands() - before).toBe(1);
    expect(await bed.redis().hlen(`${prefix}:{job}:parked`)).toBe(0);
    await held.release();
  });

  it("the fair lock hands over in queue order", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const held = await holder.fairLock("job").acquire({ leaseMs: 10_000 });
    const order: number[] = [];
    const runs: Promise<void>[] = [];
    for (const index of [0, 1, 2, 3]) {
      const client = bed.client({ prefix, wait: PUSH });
      runs.push(
        client
          .fairLock("job")
          .acquire({ leaseMs: 10_000 })
          .then(async (handle) => {
            order.push(index);
            await handle.release();
          }),
      );
      await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === index + 1);
    }
    await held.release();
    await Promise.all(runs);
    expect(order).toEqual([0, 1, 2, 3]);
  });

  it("a handed-off hold held past half its claim window confirms its own lease", async () => {
    for (const leaseMs of [5_000, undefined]) {
      const prefix = freshPrefix();
      const holder = bed.client({ prefix });
      const waiter = bed.client({ prefix, wait: { mode: "push", claimMs: 400 } });
      const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
      const waiting = waiter.lock("job").acquire(leaseMs === undefined ? {} : { leaseMs });
      await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
      await held.release();
      const handle = await waiting;
      // Granted for the claim window only…
      expect(await bed.redis().pttl(`${prefix}:{job}`)).toBeLessThanOrEqual(400);
      // …and confirmed at half of it: still held well past the window, signal untouched.
      await sleepMs(800);
      expect(await waiter.lock("job").holdCount(handle.owner)).toBe(1);
      expect(await bed.redis().pttl(`${prefix}:{job}`)).toBeGreaterThan(2_000);
      expect(handle.signal.aborted).toBe(false);
      await handle.release();
    }
  });

  it("a grant to a waiter that died while parked passes on after the claim window", async () => {
    const prefix = freshPrefix();
    const options: Partial<LockClientOptions> = { prefix, wait: { mode: "push", claimMs: 500 } };
    // Learn the rhythm of the lock first (short holds, handed over).
    const warm = bed.client(options);
    for (let i = 0; i < 3; i++)
      await (await warm.lock("job").acquire({ leaseMs: 10_000 })).release();
    const holder = bed.client({ prefix });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    // A waiter registers, parks, and its process dies: nothing it sends gets anywhere again.
    const dead = bed.client({ ...options, redis: dyingAfterPark(bed.redis()) });
    void dead
      .lock("job")
      .acquire({ leaseMs: 10_000 })
      .catch(() => {});
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    const live = bed.client(options);
    const waiting = live.lock("job").acquire({ leaseMs: 10_000 });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 2);
    await sleepMs(100);
    const releasedAt = Date.now();
    await held.release();
    const handle = await waiting;
    const passedOnAfter = Date.now() - releasedAt;
    // The dead waiter was granted the claim window (500 ms); the live one took the lock soon
    // after it ran out.
    expect(passedOnAfter).toBeGreaterThanOrEqual(400);
    expect(passedOnAfter).toBeLessThan(500 + 1_500);
    expect(handle.fencingToken).toBe(held.fencingToken + 2);
    await handle.release();
  });

  it("rejects push mode for a Redis client that cannot send a blocking command", async () => {
    const redis = bed.redis();
    const scriptsOnly = {
      eval: redis.eval.bind(redis),
      evalsha: redis.evalsha.bind(redis),
    } as unknown as ConstructorParameters<typeof LockClient>[0]["redis"];
    expect(() => new LockClient({ redis: scriptsOnly, wait: PUSH })).toThrow(LockInputError);
    const client = new LockClient({ redis: scriptsOnly, prefix: freshPrefix() });
    const before = bed.requests();
    await expect(client.lock("job").acquire({ wait: PUSH })).rejects.toThrow(LockInputError);
    expect(bed.requests()).toBe(before);
  });
});

/**
 * Issue 28 ("every hold is its own identity"): one owner is a request scope, whose async tasks
 * hold one lock one after another or at once. An act meant for one hold — a watchdog renewal, a
 * claim confirmation — must never land on a later hold of the same owner.
 */
import { describe, expect, it } from "vitest";
import {
  LockAbortedError,
  LockBudgetExceededError,
  type LockClient,
  LockWaitTimeoutError,
  RedLock,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { recordingRedis } from "../../support/recording-redis.js";
import { freshPrefix, until, useTestBed } from "../exclusive/testbed.js";

/** A lock kind seen as the acquire and force release these cases need. */
interface Exclusive {
  acquire(options: { owner: string; leaseMs?: number }): Promise<{
    readonly signal: AbortSignal;
    release(): Promise<void>;
  }>;
  forceRelease(): Promise<unknown>;
  isLocked(): Promise<boolean>;
  /** The longest remaining lease of its keys, in ms. */
  remainingTtlMs(): Promise<number | null>;
}

const KINDS: Record<string, (client: LockClient, name: string) => Exclusive> = {
  lock: (client, name) => client.lock(name),
  fairLock: (client, name) => client.fairLock(name),
  writeLock: (client, name) => client.readWriteLock(name).writeLock(),

  multiLock: (client, name) => {
    const members = [client.lock(`${name}:a`), client.lock(`${name}:b`)];
    const multi = client.multiLock(members);
    return {
      acquire: (options) => multi.acquire(options),
      forceRelease: () => Promise.all(members.map((member) => member.forceRelease())),
      isLocked: async () => (await members[0]!.isLocked()) || (await members[1]!.isLocked()),
      remainingTtlMs: async () =>
        Math.max(
          ...(await Promise.all(members.map(async (m) => (await m.remainingTtlMs()) ?? -1))),
        ),
    };
  },
};

const OWNER = "scope-owner-0123456789abcdef";

async function within(ms: number, check: () => boolean | Promise<boolean>): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}

describe.each(backendKindsUnderTest())("hold identity on %s", (backend) => {
  const bed = useTestBed(backend);
  const plainBed = bed;
  // Push parks block only where the backend's pops do: a Redis behind a REST proxy.
  const blockingBed = useTestBed(backend, { profile: "redis" });

  describe.each(Object.keys(KINDS))("%s", (kind) => {
    const make = KINDS[kind]!;

    it("an ended hold's watchdog does not renew a later hold of the same owner", async () => {
      // Renewals every ~330 ms: the old handle's watchdog runs many times in the windows below.
      const client = bed.client({ watchdogTimeoutMs: 1_000 });
      const lock = make(client, "identity");
      const ended = await lock.acquire({ owner: OWNER });
      await lock.forceRelease();
      // Another task of the same scope takes the lock again, with a 1 s lease, and crashes.
      await lock.acquire({ owner: OWNER, leaseMs: 1_000 });
      // The old handle learns its hold is gone: its renewal names a hold that no longer exists.
      expect(await within(4_000, () => ended.signal.aborted)).toBe(true);
      // And the crashed later hold ends at its own lease, not kept alive by the old watchdog.
      expect(await within(3_000, async () => !(await lock.isLocked()))).toBe(true);
    });

    it("a later watchdog hold of the same owner keeps its own renewal", async () => {
      const client = bed.client({ watchdogTimeoutMs: 1_000 });
      const lock = make(client, "identity-renewed");
      const ended = await lock.acquire({ owner: OWNER });
      await lock.forceRelease();
      const later = await lock.acquire({ owner: OWNER });
      expect(await within(4_000, () => ended.signal.aborted)).toBe(true);
      // Three leases later the later hold is still renewed and intact.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(later.signal.aborted).toBe(false);
      expect(await lock.isLocked()).toBe(true);
      await later.release();
    });

    it("a late copy of an ended hold's renewal does not re-arm a later hold", async () => {
      // A client layer that re-sends on its own: each script call can be delivered again later.
      const recorded = recordingRedis(bed.redis());
      const client = bed.client({ redis: recorded.client, watchdogTimeoutMs: 5_000 });
      const lock = make(client, "late-renewal");
      const ended = await lock.acquire({ owner: OWNER });
      const before = recorded.calls.length;
      // The watchdog renews every ~1.7 s: after 2.2 s at least one renewal was sent.
      await new Promise((resolve) => setTimeout(resolve, 2_200));
      const renewals = recorded.calls.slice(before);
      expect(renewals.length).toBeGreaterThan(0);
      await ended.release();
      // The same scope takes a 1 s lease; then the renewal's late copies arrive.
      await lock.acquire({ owner: OWNER, leaseMs: 1_000 });
      for (const copy of renewals) await copy();
      const ttl = await lock.remainingTtlMs();
      expect(ttl).not.toBeNull();
      expect(ttl!).toBeLessThanOrEqual(1_000);
    });

    it("a replayed attempt of an ended hold does not attach to a later hold", async () => {
      const recorded = recordingRedis(bed.redis());
      const client = bed.client({ redis: recorded.client });
      const lock = make(client, "late-replay");
      // Task A of a scope acquires; the request that did it is kept, as a re-send would be.
      const before = recorded.calls.length;
      await lock.acquire({ owner: OWNER, leaseMs: 300 });
      const attempts = recorded.calls.slice(before);
      // A's hold runs out; task B of the same scope takes the lock fresh (a new token).
      expect(await within(3_000, async () => !(await lock.isLocked()))).toBe(true);
      const later = await lock.acquire({ owner: OWNER, leaseMs: 5_000 });
      // A's attempt arrives again (its answer was lost; the same operation id is asked again):
      // it must not be told it holds, riding on B's hold.
      for (const attempt of attempts) {
        const reply = (await attempt()) as unknown[];
        expect(reply[0]).not.toBe(1);
      }
      await later.release();
      expect(await lock.isLocked()).toBe(false);
    });
  });

  /** The queued kinds: a place in the queue (and a parked registration) per acquisition. */
  const QUEUED = [
    { kind: "lock", make: (c: LockClient) => c.lock("siblings"), fifo: false },
    { kind: "fairLock", make: (c: LockClient) => c.fairLock("siblings"), fifo: true },
    {
      kind: "writeLock",
      make: (c: LockClient) => c.readWriteLock("siblings").writeLock(),
      fifo: false,
    },
  ] as const;

  describe.each(QUEUED)("$kind", ({ make, fifo }) => {
    it.each(["poll", "push"] as const)(
      "one sibling giving up its wait leaves the other's place (%s)",
      async (mode) => {
        const bed = mode === "push" ? blockingBed : plainBed;
        const prefix = freshPrefix();
        const queueKey = `${prefix}:{siblings}:queue`;
        const holder = make(bed.client({ prefix }));
        const waiting = make(bed.client({ prefix, wait: { mode } }));
        const redis = bed.redis();
        const held = await holder.acquire({ leaseMs: 10_000 });
        // Two tasks of one scope wait at once; then an owner of another request.
        const giveUp = new AbortController();
        const first = waiting.acquire({ owner: OWNER, leaseMs: 10_000, signal: giveUp.signal });
        await until(async () => (await redis.zcard(queueKey)) === 1);
        const second = waiting.acquire({ owner: OWNER, leaseMs: 10_000 });
        await until(async () => (await redis.zcard(queueKey)) === 2);
        const later = holder.acquire({ leaseMs: 10_000 });
        await until(async () => (await redis.zcard(queueKey)) === 3);
        // The first task gives up: only its own place goes.
        giveUp.abort();
        await expect(first).rejects.toBeInstanceOf(LockAbortedError);
        expect(await redis.zcard(queueKey)).toBe(2);
        const order: string[] = [];
        const track = (label: string, handle: Promise<{ release(): Promise<void> }>) =>
          handle.then((h) => {
            order.push(label);
            return h;
          });
        const secondHeld = track("sibling", second);
        const laterHeld = track("later", later);
        const releasedAt = Date.now();
        await held.release();
        // The sibling, ahead of the later waiter, is served next in the fair lock (FIFO). The plain
        // and write locks let whichever asks first after the release take it (a poll may beat the
        // queue's head), so either may win there; in every kind both are served soon, each within
        // 2 s of the lock coming free (a place or registration lost would cost a waiter timeout).
        const winner = await Promise.race([secondHeld, laterHeld]);
        expect(Date.now() - releasedAt).toBeLessThan(2_000);
        expect(order).toHaveLength(1);
        expect(fifo ? ["sibling"] : ["sibling", "later"]).toContain(order[0]);
        await winner.release();
        const winnerReleasedAt = Date.now();
        const next = await (order[0] === "sibling" ? laterHeld : secondHeld);
        expect(Date.now() - winnerReleasedAt).toBeLessThan(2_000);
        expect([...order].sort()).toEqual(["later", "sibling"]);
        await next.release();
      },
    );
  });

  /** Every kind that waits on one name, as a waiter sees it. */
  const WAITERS = [
    {
      kind: "lock",
      make: (c: LockClient) => c.lock("late"),
      blocker: (c: LockClient) => c.lock("late"),
    },
    {
      kind: "fairLock",
      make: (c: LockClient) => c.fairLock("late"),
      blocker: (c: LockClient) => c.fairLock("late"),
    },
    {
      kind: "writeLock",
      make: (c: LockClient) => c.readWriteLock("late").writeLock(),
      blocker: (c: LockClient) => c.readWriteLock("late").writeLock(),
    },
    {
      kind: "readLock",
      make: (c: LockClient) => c.readWriteLock("late").readLock(),
      blocker: (c: LockClient) => c.readWriteLock("late").writeLock(),
    },
  ] as const;

  describe.each(WAITERS)("$kind", ({ make, blocker }) => {
    it.each([
      ["its wait ran out", { waitMs: 300 }, LockWaitTimeoutError],
      [
        "its poll budget ran out",
        { waitMs: 30_000, wait: { maxPolls: 2 } },
        LockBudgetExceededError,
      ],
    ] as const)(
      "a late copy of an attempt of an acquisition that gave up (%s) takes nothing",
      async (_, giveUp, gaveUpWith) => {
        const prefix = freshPrefix();
        const holder = blocker(bed.client({ prefix }));
        const recorded = recordingRedis(bed.redis());
        const waiter = make(bed.client({ prefix, redis: recorded.client }));
        const held = await holder.acquire({ leaseMs: 10_000 });
        const before = recorded.calls.length;
        await expect(
          waiter.acquire({ owner: OWNER, leaseMs: 10_000, ...giveUp }),
        ).rejects.toBeInstanceOf(gaveUpWith);
        const attempts = recorded.calls.slice(before);
        await held.release();
        // The Redis client re-sends the acquisition's requests after edgelock gave up on them:
        // none may take a hold that no handle owns.
        for (const copy of attempts) await copy();
        expect(await waiter.isLocked()).toBe(false);
        expect(await waiter.holdCount(OWNER)).toBe(0);
      },
    );
  });

  it("MultiLock: a late copy of a busy attempt takes nothing after the acquisition succeeded", async () => {
    const prefix = freshPrefix();
    const recorded = recordingRedis(bed.redis());
    const waiter = bed.client({ prefix, redis: recorded.client });
    const other = bed.client({ prefix });
    // Another owner holds one member and lets go after a moment: the first attempt is busy.
    const blocker = await other.lock("a").acquire({ leaseMs: 30_000 });
    setTimeout(() => void blocker.release(), 150);
    const multi = waiter.multiLock([waiter.lock("a"), waiter.lock("b")]);
    const before = recorded.calls.length;
    const held = await multi.acquire({ leaseMs: 30_000, waitMs: 5_000 });
    const attempts = recorded.calls.slice(before);
    await held.release();
    // The first, busy attempt reaches Redis again only now (the Redis client re-sent it).
    await attempts[0]!();
    expect(await other.lock("a").holdCount(held.owner)).toBe(0);
    expect(await other.lock("b").holdCount(held.owner)).toBe(0);
  });

  it("RedLock: a late copy of a busy attempt takes nothing after the acquisition succeeded", async () => {
    const recorded = recordingRedis(bed.redis());
    const prefixes = [freshPrefix(), freshPrefix(), freshPrefix()];
    const clients = prefixes.map((prefix, i) =>
      bed.client({ prefix, ...(i === 0 ? { redis: recorded.client } : {}) }),
    );
    // Another owner holds the lock on every database and lets go after a moment.
    const others = prefixes.map((prefix) => bed.client({ prefix }));
    const blockers = await Promise.all(others.map((c) => c.lock("q").acquire({ leaseMs: 30_000 })));
    setTimeout(() => void Promise.all(blockers.map((b) => b.release())), 150);
    const before = recorded.calls.length;
    const held = await new RedLock(clients).lock("q").acquire({ leaseMs: 30_000, waitMs: 5_000 });
    const attempts = recorded.calls.slice(before);
    await held.release();
    await attempts[0]!(); // the first, busy attempt on the first database arrives only now
    expect(await others[0]!.lock("q").holdCount(held.owner)).toBe(0);
  });
});

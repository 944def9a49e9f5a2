/**
 * Paced polling: the acquire script reports how long holds of the lock usually last, and a waiter
 * (of the plain lock, of the write lock) sleeps until the expected release instead of polling
 * blindly through the hold.
 */
import { describe, expect, it } from "vitest";
import { blindRedis as blind } from "../../../bench/peers/blind-redis.js";
import { LockClient, LockWaitTimeoutError } from "../../../src/index.js";
import { ACQUIRE } from "../../../src/locks/exclusive/lock.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";

/** These tests are about polling: push (the default) hands the lock over instead. */
const POLL = { mode: "poll" } as const;

const HOLD_MS = 300;

/** The kinds whose waiters queue and are paced by their turn, and their acquire script's name. */
const PACED_KINDS = [
  { kind: "the plain lock", script: "lock.acquire", lockOf: (c: LockClient) => c.lock("rhythm") },
  {
    kind: "the write lock",
    script: "readWriteLock.acquireWrite",
    lockOf: (c: LockClient) => c.readWriteLock("rhythm").writeLock(),
  },
] as const;
type PacedKind = (typeof PACED_KINDS)[number];

describe.each(backendKindsUnderTest())("paced polling on %s", (kind) => {
  const bed = useTestBed(kind);

  /**
   * A holder holds one lock for HOLD_MS, twice (teaching the lock its rhythm), then a third time
   * while a waiter (blind: the pace hints hidden) asks for it. Resolves to the waiter's attempts.
   */
  async function attemptsWhileHeld(paced: PacedKind, hideHints: boolean) {
    const prefix = freshPrefix();
    const holder = paced.lockOf(bed.client({ prefix }));
    let attempts = 0;
    const redis = bed.redis();
    const waiter = bed.client({
      prefix,
      wait: { mode: "poll" },
      redis: hideHints ? blind(redis) : redis,
      observer: {
        onAttempt: (script) => {
          if (script.name === paced.script) attempts += 1;
        },
      },
    });
    // Each round, a helper queues behind the holder and so takes the lock from the queue: its
    // hold is timed and teaches the lock HOLD_MS. (An uncontended hold, the holder's, takes the
    // fast path and teaches nothing: issue 42.)
    const helper = paced.lockOf(bed.client({ prefix }));
    for (let i = 0; i < 2; i++) {
      const held = await holder.acquire({ leaseMs: 10_000 });
      const queued = helper.acquire({ leaseMs: 10_000 });
      await sleepMs(HOLD_MS);
      await held.release();
      const taken = await queued;
      await sleepMs(HOLD_MS);
      await taken.release();
    }
    const held = await holder.acquire({ leaseMs: 10_000 });
    setTimeout(() => void held.release(), HOLD_MS);
    const started = Date.now();
    const next = await paced.lockOf(waiter).acquire({ leaseMs: 10_000 });
    const waited = Date.now() - started;
    await next.release();
    return { attempts, waited };
  }

  /** Asks the plain lock `name` directly, as the library does (six keys, six arguments). */
  async function busyReply(prefix: string, name: string, waiter: string) {
    const base = `${prefix}:{${name}}`;
    const reply = (await bed
      .redis()
      .eval(
        ACQUIRE.keyLocking.source,
        [
          base,
          `${base}:fence`,
          `${base}:op:${waiter}`,
          `${base}:holds`,
          `${base}:queue`,
          `${base}:timeouts`,
        ],
        [`${waiter}-0000000`, "10000", "60000", "3600000", "5000", "20"],
      )) as number[];
    const [status, pttl, position, holdMs, , , heldForMs] = reply.map(Number);
    return { status, pttl, position, holdMs, heldForMs };
  }

  it("a busy reply tells the waiter its place, the usual hold and how long the holder has held", async () => {
    const prefix = freshPrefix();
    const [a, b, c] = [1, 2, 3].map(() => bed.client({ prefix, wait: POLL }).lock("told"));
    // a holds uncontended (the fast path: its hold is not timed); b queues behind it and takes it
    // from the queue (timed), c queues behind b: b's 100 ms hold is learnt at its release, and
    // c's hold, taken from the queue, is timed from its start.
    const first = await a!.acquire({ leaseMs: 10_000 });
    const second = b!.acquire({ leaseMs: 10_000 });
    await sleepMs(50);
    await first.release();
    const secondHeld = await second;
    const third = c!.acquire({ leaseMs: 10_000 });
    await sleepMs(100);
    await secondHeld.release();
    const held = await third;
    await sleepMs(50);
    const { status, pttl, position, holdMs, heldForMs } = await busyReply(prefix, "told", "x");
    expect(status).toBe(0);
    expect(pttl).toBeGreaterThan(9_000);
    // The first waiter gets a ticket at the head of the queue.
    expect(position).toBe(0);
    expect(holdMs).toBeGreaterThanOrEqual(100);
    expect(holdMs).toBeLessThan(1_000);
    expect(heldForMs).toBeGreaterThanOrEqual(40);
    expect(heldForMs).toBeLessThan(1_000);
    await held.release();
  });

  it("behind an uncontended hold (the fast path) the first waiter learns the usual hold, not how long it has been held", async () => {
    const prefix = freshPrefix();
    const [a, b] = [1, 2].map(() => bed.client({ prefix, wait: POLL }).lock("fast"));
    // A timed hold of 100 ms first (b's, taken from the queue), then an uncontended one.
    const first = await a!.acquire({ leaseMs: 10_000 });
    const second = b!.acquire({ leaseMs: 10_000 });
    await sleepMs(50);
    await first.release();
    const secondHeld = await second;
    await sleepMs(100);
    await secondHeld.release();
    const held = await a!.acquire({ leaseMs: 10_000 });
    await sleepMs(50);
    const { status, position, holdMs, heldForMs } = await busyReply(prefix, "fast", "y");
    expect(status).toBe(0);
    expect(position).toBe(0);
    expect(holdMs).toBeGreaterThanOrEqual(100);
    expect(holdMs).toBeLessThan(1_000);
    // Its start is known to nobody (b's start would read as this hold's: not told).
    expect(heldForMs).toBe(-1);
    await held.release();
  });

  it.each(PACED_KINDS)(
    "a waiter of $kind sleeps until the usual release instead of polling through the hold",
    async (pacedKind) => {
      const paced = await attemptsWhileHeld(pacedKind, false);
      const blindly = await attemptsWhileHeld(pacedKind, true);
      // Blind full-jitter backoff (ceilings 10, 20, 40, 80, 160, 250 ms) needs at least 6 attempts
      // to outlast a 300 ms hold, usually 7 or 8. Paced: one busy reply, then the hand-off (a late
      // release under a loaded machine may cost a poll or two).
      const seen = `paced ${paced.attempts}, blind ${blindly.attempts}`;
      expect(paced.attempts, seen).toBeLessThanOrEqual(5);
      expect(paced.attempts, seen).toBeLessThanOrEqual(blindly.attempts);
      // And it does not sleep through to a bound (the 2.5 s pace cap, the 10 s lease): it asks
      // around the expected release. (How close to it is measured in bench/, not asserted here.)
      expect(paced.waited).toBeLessThan(2_000);
    },
  );
});

/**
 * A waiter far back: the lock is held for good, four waiters that never give up stand ahead of
 * it, and the lock's statistics say a hand-off every 3 s, so its turn is ~9 s off. The waiter
 * timeout is the default 5 s: a waiter polls at least every 1.67 s to keep its place, unless
 * the server keeps it longer.
 */
describe.each(backendKindsUnderTest())("a waiter far back on %s", (kind) => {
  const bed = useTestBed(kind);

  async function waitFarBack(fair: boolean) {
    const redis = bed.redis();
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const held = await holder.lock("far").acquire({ leaseMs: 30_000 });
    const base = `${prefix}:{far}`;
    const [seconds, micros] = (await redis.time()).map(Number) as [number, number];
    const now = seconds * 1000 + Math.floor(micros / 1000);
    await redis.hset(`${base}:holds`, { at: now, hold: 3_000, dev: 5, cycle: 3_000 });
    for (let ahead = 1; ahead <= 4; ahead++) {
      await redis.zadd(`${base}:queue`, { score: now - 100 + ahead, member: `ahead-${ahead}` });
      await redis.zadd(`${base}:timeouts`, { score: now + 60_000, member: `ahead-${ahead}` });
    }
    let attempts = 0;
    const waiter = bed.client({
      prefix,
      wait: { mode: "poll" },
      observer: {
        onAttempt: (script) => {
          if (script.name === "lock.acquire" || script.name === "fairLock.acquire") attempts += 1;
        },
      },
    });
    const owner = LockClient.newOwner();
    const lock = fair ? waiter.fairLock("far") : waiter.lock("far");
    const waiting = lock.acquire({ owner, waitMs: 6_000 }).catch((error: unknown) => error);
    // By 2.5 s the waiter has asked twice (the ticket, then at 1.67 s).
    await sleepMs(2_500);
    const [nowSeconds, nowMicros] = (await redis.time()).map(Number) as [number, number];
    // Its place is its acquisition's: the member is the owner and the acquisition's id.
    const members = await redis.zrange<string[]>(`${base}:timeouts`, 0, -1);
    const member = members.find((each) => each.startsWith(`${owner} `))!;
    const deadline = Number(await redis.zscore(`${base}:timeouts`, member));
    const keptMs = deadline - (nowSeconds * 1000 + Math.floor(nowMicros / 1000));
    await sleepMs(1_800);
    const attemptsBy4s = attempts;
    const outcome = await waiting;
    await held.release();
    return { keptMs, attemptsBy4s, outcome };
  }

  it("of the plain lock asks the server to keep its place longer, and sleeps longer", async () => {
    const { keptMs, attemptsBy4s, outcome } = await waitFarBack(false);
    // Its second attempt (at 1.67 s) asked to be kept a third of the timeout longer (its turn
    // is ~9 s off): 0.8 s later, 5.9 s are left, where the timeout alone leaves 4.2 s. So it
    // sleeps 3.3 s, not 1.67 s: two attempts by 4.3 s, not three.
    expect(keptMs).toBeGreaterThan(5_300);
    expect(attemptsBy4s).toBeLessThanOrEqual(2);
    expect(outcome).toBeInstanceOf(LockWaitTimeoutError);
  });

  it("of the fair lock keeps the waiter timeout: nobody waits behind a dead waiter longer", async () => {
    const { keptMs, attemptsBy4s, outcome } = await waitFarBack(true);
    expect(keptMs).toBeLessThanOrEqual(5_000);
    expect(attemptsBy4s).toBeGreaterThanOrEqual(3);
    expect(outcome).toBeInstanceOf(LockWaitTimeoutError);
  });
});

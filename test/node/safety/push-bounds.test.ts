/**
 * Issue 28, push bounds: a lost park answer keeps the waiter's turn (FIFO in the fair lock), and
 * a grant to a dead parked head passes on within about the claim window of the release, even
 * when the release comes long before the holder's lease would have ended.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { LockClient, LockHandle } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { dyingAfterPark, freshPrefix, sleepMs, until, useTestBed } from "../exclusive/testbed.js";

const PUSH = { mode: "push" } as const;

/** The queued kinds that park. */
const KINDS = [
  { kind: "fair lock", lockOf: (c: LockClient) => c.fairLock("job"), fifo: true },
  { kind: "lock", lockOf: (c: LockClient) => c.lock("job"), fifo: false },
  {
    kind: "write lock",
    lockOf: (c: LockClient) => c.readWriteLock("job").writeLock(),
    fifo: false,
  },
] as const;

describe.each(backendKindsUnderTest())("push bounds on %s", (backend) => {
  // Parks block only where the backend's pops do: a Redis behind a REST proxy.
  const bed = useTestBed(backend, { profile: "redis" });
  afterEach(() => bed.server.faults.disable());
  const parked = (prefix: string) => bed.redis().hlen(`${prefix}:{job}:parked`);

  describe.each(KINDS)("$kind", ({ lockOf, fifo }) => {
    it("a lost park answer keeps the waiter's turn: the re-sent pop finds the grant", async () => {
      const prefix = freshPrefix();
      const holder = lockOf(bed.client({ prefix }));
      const held = await holder.acquire({ leaseMs: 10_000 });
      // The first waiter's park gets the grant, and that answer is lost: @upstash/redis
      // re-sends the pop on its own.
      bed.server.faults.configure({ dropAfterExecute: 1, commands: ["blpop"], maxFaults: 1 });
      const order: string[] = [];
      const waiters = ["W1", "W2", "W3"].map((label, i) => ({ label, i }));
      const pending: Promise<LockHandle>[] = [];
      for (const { label, i } of waiters) {
        const lock = lockOf(bed.client({ prefix, wait: PUSH }));
        pending.push(
          lock.acquire({ leaseMs: 10_000 }).then((handle) => {
            order.push(label);
            return handle;
          }),
        );
        await until(async () => (await parked(prefix)) === i + 1);
      }
      const releasedAt = Date.now();
      await held.release();
      const first = await Promise.race(pending);
      expect(bed.server.faults.counts().dropAfterExecute).toBe(1);
      // W1 holds at once, not after its pop's full timeout and a new place at the tail.
      expect(Date.now() - releasedAt).toBeLessThan(1_500);
      // The grant went to the parked head, W1, in every kind: it keeps it.
      expect(order).toEqual(["W1"]);
      await first.release();
      for (const handle of pending) {
        const next = await handle;
        if (next !== first) await next.release();
      }
      // guard: only the fair lock promises the order of those behind W1 (W1 first is asserted
      // above for every kind).
      if (fifo) expect(order).toEqual(["W1", "W2", "W3"]);
    });

    it("a grant to a dead parked head passes on about a claim window after an early release", async () => {
      const prefix = freshPrefix();
      const holder = lockOf(bed.client({ prefix }));
      // The holder means to hold 8 s, and releases after a moment.
      const held = await holder.acquire({ leaseMs: 8_000 });
      // The head parks, then its process dies; a live waiter parks behind it.
      const dead = lockOf(bed.client({ prefix, wait: PUSH, redis: dyingAfterPark(bed.redis()) }));
      void dead.acquire({ leaseMs: 10_000 }).catch(() => {});
      await until(async () => (await parked(prefix)) === 1);
      const live = lockOf(bed.client({ prefix, wait: PUSH }));
      const waiting = live.acquire({ leaseMs: 10_000 });
      await until(async () => (await parked(prefix)) === 2);
      const releasedAt = Date.now();
      await held.release();
      // The grant goes to the dead head for its claim window (2 s), then the live waiter's.
      const handle = await waiting;
      const after = Date.now() - releasedAt;
      expect(after).toBeGreaterThanOrEqual(1_900);
      expect(after).toBeLessThan(3_500);
      await handle.release();
    });

    it("a grant after word of the hand-off ahead is trusted no longer than the server grants it", async () => {
      const prefix = freshPrefix();
      const holder = lockOf(bed.client({ prefix }));
      const held = await holder.acquire({ leaseMs: 8_000 });
      const head = lockOf(bed.client({ prefix, wait: PUSH }));
      const headWaiting = head.acquire({ leaseMs: 10_000 });
      await until(async () => (await parked(prefix)) === 1);
      const behind = lockOf(bed.client({ prefix, wait: PUSH }));
      const behindWaiting = behind.acquire({ leaseMs: 10_000 });
      await until(async () => (await parked(prefix)) === 2);
      // The waiter behind registered well before the word of the hand-off ahead reaches it.
      await sleepMs(600);
      await held.release();
      const first = await headWaiting;
      await sleepMs(100);
      await first.release();
      const second = await behindWaiting;
      // Its hold lasts the claim window from the grant; the handle's end may not be later than
      // the server's (the grant is anchored at the registration, not at the word).
      const pttl = await bed.redis().pttl(`${prefix}:{job}`);
      expect(second.expiresAt).toBeLessThanOrEqual(Date.now() + pttl + 30);
      await second.release();
    });
  });
});

/**
 * A fresh client's first wait on a lock (its first attempt sent before any stream: an uncontended
 * ask costs none) opens the stream at the busy answer, and a waiter behind the head asks again
 * once the server confirmed it (Listening.sawTurn): its second attempt registers to be told its
 * turn. Before, the stream opened with the second attempt, which therefore went out unregistered
 * (a poll), and a third registered: a burst of fresh waiters (a Worker's cold start, issue 43's
 * lock commands per increment) paid one request more each. Every kind that waits over a
 * subscription: the plain, fair and write lock, and the semaphore.
 */
import { describe, expect, it } from "vitest";
import type { LockClient } from "../../../../src/index.js";
import { backendKindsUnderTest } from "../../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../../exclusive/testbed.js";

const WAITERS = 4;
// A fair waiter parks at most three quarters of its claim window: longer than the test's wait.
const WAIT = { claimMs: 10_000 } as const;

interface Hold {
  release(): Promise<unknown>;
}

/** A kind as the test uses it: its acquire script, and one acquisition by `client`. */
interface Kind {
  readonly script: string;
  readonly setUp?: (client: LockClient) => Promise<unknown>;
  readonly acquire: (
    client: LockClient,
    options: { leaseMs: number; waitMs?: number },
  ) => Promise<Hold>;
}

const KINDS: Record<string, Kind> = {
  "plain lock": {
    script: "lock.acquire",
    acquire: (client, options) => client.lock("cold").acquire(options),
  },
  "fair lock": {
    script: "fairLock.acquire",
    acquire: (client, options) => client.fairLock("cold").acquire(options),
  },
  "write lock": {
    script: "readWriteLock.acquireWrite",
    acquire: (client, options) => client.readWriteLock("cold").writeLock().acquire(options),
  },
  semaphore: {
    script: "semaphore.acquire",
    setUp: (client) => client.semaphore("cold").trySetPermits(1),
    acquire: (client, options) => client.semaphore("cold").acquire(options),
  },
};

describe.each(backendKindsUnderTest())("a fresh waiter's first wait on %s", (backend) => {
  const bed = useTestBed(backend);

  it.each(Object.keys(KINDS))(
    "%s: registers with its second attempt, its stream confirmed in between",
    async (name) => {
      const kind = KINDS[name]!;
      const prefix = freshPrefix();
      const admin = bed.client({ prefix });
      await kind.setUp?.(admin);
      const holder = await kind.acquire(admin, { leaseMs: 10_000 });
      const attempts: number[] = Array.from({ length: WAITERS }, () => 0);
      const clients = attempts.map((_, i) =>
        bed.client({
          prefix,
          wait: WAIT,
          observer: {
            onAttempt: (script) => {
              if (script.name === kind.script) attempts[i]! += 1;
            },
          },
        }),
      );
      let inside = 0;
      let most = 0;
      const waits = clients.map(async (client) => {
        const handle = await kind.acquire(client, { leaseMs: 10_000, waitMs: 20_000 });
        inside += 1;
        most = Math.max(most, inside);
        await sleepMs(20);
        inside -= 1;
        await handle.release();
      });
      // Every waiter has asked, been queued and parked well before the release.
      await sleepMs(1_500);
      await holder.release();
      await Promise.all(waits);
      expect(most).toBe(1);
      // Each behind the head: the first attempt (no stream), then the one that registers; the
      // release's word serves it with no attempt more (unregistered second attempts made it 3
      // each). The head, whose turn may be next, polls by its turn until its stream is confirmed.
      expect(attempts.filter((count) => count <= 2).length).toBeGreaterThanOrEqual(WAITERS - 1);
      expect(attempts.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(2 * WAITERS + 1);
    },
    30_000,
  );
});

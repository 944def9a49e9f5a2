/**
 * A fresh client's first wait on a lock (its first attempt sent before any stream: an uncontended
 * ask costs none) opens the stream at the busy answer, and a waiter behind the head asks again
 * once the server confirmed it (Listening.sawTurn): its second attempt registers to be told its
 * turn. Before, the stream opened with the second attempt, which therefore went out unregistered
 * (a poll), and a third registered: a burst of fresh waiters (a Worker's cold start, issue 43's
 * lock commands per increment) paid one request more each.
 */
import { describe, expect, it } from "vitest";
import { backendKindsUnderTest } from "../../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../../exclusive/testbed.js";

const WAITERS = 4;

describe.each(backendKindsUnderTest())("a fresh waiter's first wait on %s", (kind) => {
  const bed = useTestBed(kind);

  it("registers with its second attempt, its stream confirmed in between", async () => {
    const prefix = freshPrefix();
    const holder = await bed.client({ prefix }).lock("cold").acquire({ leaseMs: 10_000 });
    const attempts: number[] = Array.from({ length: WAITERS }, () => 0);
    const clients = attempts.map((_, i) =>
      bed.client({
        prefix,
        observer: {
          onAttempt: (script) => {
            if (script.name === "lock.acquire") attempts[i]! += 1;
          },
        },
      }),
    );
    let inside = 0;
    let most = 0;
    const waits = clients.map(async (client) => {
      const handle = await client.lock("cold").acquire({ leaseMs: 10_000, waitMs: 20_000 });
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
    // Each: the first attempt (no stream), then the one that registers; the release's word
    // serves it with no attempt more. Unregistered second attempts made it 3 each at least.
    expect(attempts.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(2 * WAITERS + 1);
  }, 30_000);
});

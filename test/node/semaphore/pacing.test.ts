/**
 * A real waiter for permits on a long hold, counted at the call site: next in line, it backs off
 * with each busy answer (1e592b9) instead of polling at the first backoff step every time, which
 * spent its whole poll budget (`wait.maxPolls`, 100) within about a second and gave up on a wait
 * it had time for. The unit tests (test/node/wait/permit-pacing.test.ts) check the delays; this
 * checks that the semaphore's waiters are paced by them.
 */
import { describe, expect, it } from "vitest";
import { LockClient, type RedisLike } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";

/** A Redis client that counts the scripts it sends (every attempt of a waiter is one). */
function countingScripts(redis: RedisLike): { redis: RedisLike; scripts: () => number } {
  let scripts = 0;
  return {
    redis: {
      eval: (script, keys, args) => {
        scripts += 1;
        return redis.eval(script, keys, args);
      },
      evalsha: (sha, keys, args) => {
        scripts += 1;
        return redis.evalsha(sha, keys, args);
      },
    },
    scripts: () => scripts,
  };
}

describe.each(backendKindsUnderTest())("semaphore waiter pacing on %s", (kind) => {
  const bed = useTestBed(kind);

  it("a waiter next in line on a 3 s hold keeps within its poll budget and gets the permit", async () => {
    const HOLD_MS = 3_000;
    const prefix = freshPrefix();
    const semaphore = bed.client({ prefix }).semaphore("pacing-long-hold");
    expect(await semaphore.trySetPermits(1)).toBe(true);
    const held = await semaphore.acquire({ leaseMs: 30_000 });

    const counted = countingScripts(bed.redis());
    const waiter = new LockClient({
      redis: counted.redis,
      prefix,
      ...(bed.server.profile === "redis" ? { scriptKeyLocking: false } : {}),
      wait: { mode: "poll" },
    });
    // The default polling policy: 10 ms first step, 250 ms cap, then a backoff from the time
    // waited (an eighth to a quarter of it: at most 750 ms after 3 s).
    const waiting = waiter
      .semaphore("pacing-long-hold")
      .acquire({ leaseMs: 10_000, waitMs: 20_000 })
      .then(
        (handle) => ({ handle }),
        (error: unknown) => ({ error }),
      );
    await sleepMs(HOLD_MS);
    const pollsDuringHold = counted.scripts();
    const releasedAt = Date.now();
    await held.release();
    const outcome = await waiting;
    const waitedAfterRelease = Date.now() - releasedAt;

    // Backing off to the 250 ms cap: about 5 polls to reach it, then one per 125 ms on average,
    // about 28 in 3 s. Polling at the first step (10 ms) every time spends all 100 within about
    // a second.
    expect(pollsDuringHold).toBeGreaterThan(3);
    expect(pollsDuringHold).toBeLessThan(50);
    if ("error" in outcome) throw outcome.error;
    // One capped backoff step at most after the release, with room for a slow machine.
    expect(waitedAfterRelease).toBeLessThan(1_000);
    await outcome.handle.release();
    expect(await semaphore.availablePermits()).toBe(1);
  });
});

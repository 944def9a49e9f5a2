/**
 * Exactly-once under re-sends: @upstash/redis re-sends a request whose answer was lost after the
 * server ran it, and a copy can arrive late, after the caller gave up. A re-sent acquire whose
 * first copy took permits replays that hold; a late copy after the caller gave up takes nothing;
 * a re-sent capacity change applies once; under a lossy server no permit leaks or doubles.
 */
import { describe, expect, it } from "vitest";
import { LockWaitTimeoutError, type PermitHandle } from "../../../src/index.js";
import { backendKindsUnderTest, LOSSY_BACKEND_TIMEOUT_MS } from "../../support/backends.js";
import { recordingRedis } from "../../support/recording-redis.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("semaphore exactly-once on %s", (kind) => {
  const bed = useTestBed(kind);

  it("replays a re-sent acquire that took permits, taking none twice", async () => {
    const recorded = recordingRedis(bed.redis());
    const semaphore = bed
      .client({ redis: recorded.client })
      .semaphore("resent", { initialPermits: 3 });
    const before = recorded.calls.length;
    const held = await semaphore.acquire({ permits: 2, leaseMs: 10_000 });
    const copies = recorded.calls.slice(before);
    for (const copy of copies) {
      expect(await copy()).toEqual([1, held.fencingToken]);
    }
    expect(await semaphore.state()).toMatchObject({ held: 2, holds: 1 });
    await held.release();
    // A copy of the acquire after the release finds its hold gone: it takes nothing again.
    for (const copy of copies) expect(((await copy()) as number[])[0]).toBe(-1);
    expect(await semaphore.state()).toMatchObject({ held: 0, holds: 0, available: 3 });
  });

  it("takes nothing for a late copy of an attempt whose caller gave up", async () => {
    const prefix = freshPrefix();
    const holder = await bed
      .client({ prefix })
      .semaphore("late", { initialPermits: 1 })
      .acquire({ leaseMs: 10_000 });
    const recorded = recordingRedis(bed.redis());
    const semaphore = bed.client({ prefix, redis: recorded.client }).semaphore("late");
    const error = await semaphore.acquire({ waitMs: 200 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockWaitTimeoutError);
    await holder.release();
    // Every request of the abandoned wait arrives again, now that the permit is free.
    for (const copy of recorded.calls) await copy();
    expect(await semaphore.state()).toMatchObject({ capacity: 1, held: 0, waiters: 0 });
  });

  it("applies a re-sent capacity change once", async () => {
    const recorded = recordingRedis(bed.redis());
    const semaphore = bed.client({ redis: recorded.client }).semaphore("resent-capacity");
    await semaphore.setPermits(1);
    const before = recorded.calls.length;
    expect(await semaphore.addPermits(2)).toBe(3);
    for (const copy of recorded.calls.slice(before)) await copy();
    expect((await semaphore.state()).capacity).toBe(3);
    const drainedFrom = recorded.calls.length;
    expect(await semaphore.drainPermits()).toBe(3);
    const drains = recorded.calls.slice(drainedFrom);
    await semaphore.addPermits(1);
    for (const copy of drains) await copy();
    expect((await semaphore.state()).capacity).toBe(1);
  });

  describe("under a server that loses a third of its answers", () => {
    const lossy = useTestBed(kind, { faults: { dropAfterExecute: 0.3, seed: 33 } });

    it("never holds more than the capacity, and leaks no permit", async () => {
      const prefix = freshPrefix();
      const capacity = 3;
      let inside = 0;
      let most = 0;
      const worker = async (index: number) => {
        const semaphore = lossy
          .client({
            prefix,
            retries: 5,
            backendTimeoutMs: LOSSY_BACKEND_TIMEOUT_MS,
            wait: { maxPolls: 10_000 },
          })
          .semaphore("lossy", { initialPermits: capacity });
        for (let round = 0; round < 4; round++) {
          const permits = 1 + ((index + round) % 2);
          const held: PermitHandle = await semaphore.acquire({
            permits,
            leaseMs: 20_000,
            waitMs: 30_000,
          });
          inside += permits;
          most = Math.max(most, inside);
          await sleepMs(5 + Math.random() * 15);
          inside -= permits;
          await held.release();
        }
      };
      await Promise.all(Array.from({ length: 5 }, (_, i) => worker(i)));
      expect(most).toBeLessThanOrEqual(capacity);
      const state = await lossy
        .client({ prefix, retries: 5, backendTimeoutMs: LOSSY_BACKEND_TIMEOUT_MS })
        .semaphore("lossy")
        .state();
      expect(state).toMatchObject({ capacity, held: 0, holds: 0, available: capacity, waiters: 0 });
    });
  });
});

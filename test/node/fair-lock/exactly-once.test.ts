/**
 * Exactly-once under responses lost after execution (@upstash/redis and edgelock re-send): the
 * queue keeps its order and loses nobody twice. (Hold counts: test/node/exclusive/exclusive-conformance.)
 */
import { describe, expect, it } from "vitest";
import { type LockHandle, LockWaitTimeoutError } from "../../../src/index.js";
import { backendKindsUnderTest, LOSSY_BACKEND_TIMEOUT_MS } from "../../support/backends.js";
import { until, useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())(
  "fair lock exactly-once under lost responses on %s",
  (kind) => {
    // Every third response is lost after the command ran; @upstash/redis re-sends the request.
    const bed = useTestBed(kind, { faults: { dropAfterExecute: 0.3, seed: 11 } });

    it("keeps queue order, and a waiter that gives up leaves once", async () => {
      const client = bed.client({
        retries: 5,
        backendTimeoutMs: LOSSY_BACKEND_TIMEOUT_MS,
        wait: { maxPolls: 10_000 },
      });
      const lock = client.fairLock("lossy-queue");
      const holder = await lock.acquire({ leaseMs: 30_000 });
      const order: number[] = [];
      const waiters: Promise<LockHandle>[] = [];
      for (let i = 0; i < 4; i++) {
        waiters.push(
          lock.acquire({ leaseMs: 30_000, waitMs: 30_000 }).then((held) => {
            order.push(i);
            return held;
          }),
        );
        await until(async () => (await lock.queueLength()) === i + 1);
      }
      const quitter = await lock.acquire({ waitMs: 300 }).catch((e: unknown) => e);
      expect(quitter).toBeInstanceOf(LockWaitTimeoutError);
      expect(await lock.queueLength()).toBe(4);
      await holder.release();
      for (const waiter of waiters) await (await waiter).release();
      expect(order).toEqual([0, 1, 2, 3]);
      expect(await lock.queueLength()).toBe(0);
      expect(await lock.isLocked()).toBe(false);
    });
  },
);

/** How a semaphore's waiter paces its polls from its busy answer (src/wait/permits.ts). */
import { describe, expect, it } from "vitest";
import { permitPollDelay as pollDelay } from "../../../src/wait/permits.js";
import { DEFAULT_WAIT_POLICY } from "../../../src/wait/policy.js";

const busy = (missing: number, permitGapMs: number | null, soonestLeaseEndMs: number | null) =>
  ({
    kind: "busy",
    soonestLeaseEndMs,
    position: missing - 1,
    available: 0,
    waiters: missing,
    missing,
    permitGapMs,
  }) as const;
const top = () => 0.999;

describe("a semaphore waiter's pace", () => {
  it("asks again within the first backoff step when it is next in line", () => {
    expect(pollDelay(busy(1, 50, null), DEFAULT_WAIT_POLICY, 5_000, top)).toBeLessThanOrEqual(10);
  });

  it("sleeps until about its turn when further back, once the holds' pace is known", () => {
    // Nine permits must come back before it is next in line, one about every 50 ms.
    expect(pollDelay(busy(10, 50, null), DEFAULT_WAIT_POLICY, 5_000, top)).toBe(360);
    // Before any hold was learnt: the second backoff step.
    expect(pollDelay(busy(10, null, null), DEFAULT_WAIT_POLICY, 5_000, top)).toBeLessThanOrEqual(
      20,
    );
  });

  it("never sleeps past the soonest lease end, nor a third of the waiter timeout", () => {
    expect(pollDelay(busy(10, 50, 100), DEFAULT_WAIT_POLICY, 5_000, top)).toBe(101);
    expect(pollDelay(busy(1_000, 50, null), DEFAULT_WAIT_POLICY, 3_000, top)).toBe(1_000);
  });
});

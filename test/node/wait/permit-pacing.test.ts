/** How a semaphore's waiter paces its polls from its busy answer (src/wait/permits.ts). */
import { describe, expect, it } from "vitest";
import { PermitPacer, permitPollDelay as pollDelay } from "../../../src/wait/permits.js";
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
    expect(pollDelay(busy(1, 50, null), DEFAULT_WAIT_POLICY, 5_000, 1, top)).toBeLessThanOrEqual(
      10,
    );
  });

  it("sleeps until about its turn when further back, once the holds' pace is known", () => {
    // Nine permits must come back before it is next in line, one about every 50 ms.
    expect(pollDelay(busy(10, 50, null), DEFAULT_WAIT_POLICY, 5_000, 1, top)).toBe(360);
    // Before any hold was learnt: the second backoff step.
    expect(pollDelay(busy(10, null, null), DEFAULT_WAIT_POLICY, 5_000, 1, top)).toBeLessThanOrEqual(
      20,
    );
  });

  it("next in line on long holds, backs off with each poll instead of spending its budget at once", () => {
    const delays = [1, 2, 3, 4, 5, 6, 10].map((polls) =>
      pollDelay(busy(1, null, 60_000), DEFAULT_WAIT_POLICY, 5_000, polls, top),
    );
    expect(delays).toEqual([10, 20, 40, 80, 160, 250, 250]);
    // 100 polls last at least 20 s, not a second.
    const total = Array.from({ length: 100 }, (_, i) =>
      pollDelay(busy(1, null, 60_000), DEFAULT_WAIT_POLICY, 5_000, i + 1, top),
    ).reduce((sum, ms) => sum + ms, 0);
    expect(total).toBeGreaterThan(20_000);
  });

  it("a waiter that moved up a long queue backs off from the first step once next in line", () => {
    const pacer = new PermitPacer(DEFAULT_WAIT_POLICY, 5_000, top);
    // Twenty busy answers on the way up (each sleep aimed by the permits it lacks)…
    for (let missing = 21; missing > 1; missing--) pacer.next(busy(missing, 5, 60_000));
    // …then next in line: the first backoff step, then the second, as a fresh waiter would.
    expect(pacer.next(busy(1, 5, 60_000))).toBeLessThanOrEqual(10);
    expect(pacer.next(busy(1, 5, 60_000))).toBeLessThanOrEqual(20);
    // Moved back (a waiter ahead for more), then next again: from the first step again.
    pacer.next(busy(3, 5, 60_000));
    expect(pacer.next(busy(1, 5, 60_000))).toBeLessThanOrEqual(10);
  });

  it("further back before the holds' pace is known, backs off over all its polls", () => {
    const pacer = new PermitPacer(DEFAULT_WAIT_POLICY, 5_000, top);
    const delays = Array.from({ length: 7 }, () => pacer.next(busy(5, null, 60_000)));
    expect(delays).toEqual([20, 20, 40, 80, 160, 250, 250]);
    // Once it is known, by the pace: four permits to come back, one every 50 ms.
    expect(pacer.next(busy(5, 50, 60_000))).toBe(160);
  });

  it("never sleeps past the soonest lease end, nor a third of the waiter timeout", () => {
    expect(pollDelay(busy(10, 50, 100), DEFAULT_WAIT_POLICY, 5_000, 1, top)).toBe(101);
    expect(pollDelay(busy(1_000, 50, null), DEFAULT_WAIT_POLICY, 3_000, 1, top)).toBe(1_000);
  });
});

describe("a semaphore waiter next in line behind long holds (issue 43)", () => {
  it("backs off with the time it has been next, down to polling every third of the waiter timeout", () => {
    const pacer = new PermitPacer(DEFAULT_WAIT_POLICY, 5_000, top);
    let t = 0;
    let requests = 0;
    while (t < 3_600_000) {
      requests += 1;
      t += 5 + pacer.next(busy(1, null, 3_600_000 - t), t);
    }
    // Before: 250 ms apart, 14 400 requests; now about 2 200, within the default budget.
    expect(requests).toBeLessThan(2_300);
    expect(requests).toBeLessThan(DEFAULT_WAIT_POLICY.maxPolls);
  });
});

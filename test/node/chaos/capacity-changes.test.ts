/**
 * The checks of the capacity-change pattern (test/chaos/capacity-changes.ts) on hand-made
 * observer readings: each must flag what it guards and accept what the docs allow.
 */
import { describe, expect, it } from "vitest";
import {
  type CapacityChangeRecord,
  canFit,
  capacityCeiling,
  checkCapacityErrors,
  checkGrantsWithinCapacity,
  freeForWaiters,
} from "../../chaos/capacity-changes.js";
import { idleStretches, type LiveWait } from "../../chaos/invariants.js";
import type { ArmingRequest } from "../../chaos/killable-renewer.js";
import type { KeyState, PermitHold, Sample } from "../../chaos/server-state.js";

/** A reading of key `k` at client time `at` (the server's clock equal to the client's). */
function reading(
  at: number,
  capacity: number,
  holds: readonly PermitHold[],
  waiting: readonly { owner: string; permits: number }[] = [],
): Sample {
  const state: KeyState = {
    holders: new Map(holds.map((hold) => [hold.owner, "exclusive" as const])),
    queue: new Map(waiting.map((waiter, ticket) => [waiter.owner, ticket])),
    stale: new Set(),
    capacity,
    permitHolds: holds,
    waiting,
    serverAt: at,
  };
  return { sentAt: at, answeredAt: at, states: new Map([["k", state]]) };
}

const hold = (
  owner: string,
  token: number,
  permits: number,
  grantedAt: number | null,
): PermitHold => ({
  owner,
  token,
  permits,
  grantedAt,
});

/** Capacity 3 until a shrink to 1 sent at 1 000 and settled at 1 010. */
const shrinkTo1: CapacityChangeRecord[] = [
  {
    key: "k",
    how: "set",
    sentAt: 1_000,
    settledAt: 1_010,
    before: 3,
    asked: 1,
    after: 1,
    ok: true,
  },
];

describe("chaos capacity changes: holds granted within the capacity of their moment", () => {
  it("bounds the capacity by the change windows", () => {
    expect(capacityCeiling(shrinkTo1, "k", 3, 0, 900)).toBe(3);
    expect(capacityCeiling(shrinkTo1, "k", 3, 1_005, 1_005)).toBe(3);
    expect(capacityCeiling(shrinkTo1, "k", 3, 1_020, 5_000)).toBe(1);
    expect(capacityCeiling(shrinkTo1, "k", 3, 900, 1_020)).toBe(3);
  });

  it("lets holds granted before a shrink keep their permits", () => {
    const result = checkGrantsWithinCapacity(
      [reading(2_000, 1, [hold("a", 1, 2, 500), hold("b", 2, 1, 600)])],
      shrinkTo1,
      3,
      5,
    );
    expect(result.checked).toBe(2);
    expect(result.violations).toBe(0);
  });

  it("sees a hold granted after a shrink beside holds that already took the capacity", () => {
    const result = checkGrantsWithinCapacity(
      [reading(2_000, 1, [hold("a", 1, 2, 500), hold("b", 2, 1, 1_500)])],
      shrinkTo1,
      3,
      5,
    );
    expect(result.violations).toBe(1);
    expect(result.examples[0]).toContain("3 permits where the capacity was at most 1");
  });

  it("places a hold whose grant the server did not record between the readings without and with it", () => {
    // Token 2's grant time is unknown (taken while nothing else was held: no clock read). Read
    // first at 2 000, after a reading at 1 900 without it: granted after the shrink, beside
    // token 1's 2 permits.
    const late = checkGrantsWithinCapacity(
      [
        reading(1_900, 1, [hold("a", 1, 2, 500)]),
        reading(2_000, 1, [hold("a", 1, 2, 500), hold("b", 2, 1, null)]),
      ],
      shrinkTo1,
      3,
      5,
    );
    expect(late.violations).toBe(1);
    expect(late.examples[0]).toContain("granted at server 1900–2000");
    // The reading before it at 900 (before the shrink): it may have been granted then.
    const early = checkGrantsWithinCapacity(
      [
        reading(900, 3, [hold("a", 1, 2, 500)]),
        reading(2_000, 1, [hold("a", 1, 2, 500), hold("b", 2, 1, null)]),
      ],
      shrinkTo1,
      3,
      5,
    );
    expect(early.violations).toBe(0);
    // Holds count beside it by token, not by grant time: a later token is not counted.
    const alone = checkGrantsWithinCapacity(
      [reading(2_000, 1, [hold("b", 2, 1, null), hold("a", 3, 2, 1_950)])],
      shrinkTo1,
      3,
      5,
    );
    expect(alone.examples.join("; ")).not.toContain("token 2)");
  });

  it("sees more permits granted than an unchanged capacity", () => {
    const result = checkGrantsWithinCapacity(
      [reading(2_000, 3, [hold("a", 1, 3, 500), hold("b", 2, 1, 700)])],
      [],
      3,
      5,
    );
    expect(result.violations).toBe(1);
  });
});

describe("chaos capacity changes: permits free for the waiters at the capacity of the moment", () => {
  const wait = (owner: string, permits: number): LiveWait => ({
    key: "k",
    owner,
    isolate: 0,
    shared: false,
    permits,
    startedAt: 0,
    endedAt: 10_000,
    abortedAt: Number.POSITIVE_INFINITY,
    token: undefined,
    liveUntil: 10_000,
  });

  it("skips a head that no longer fits, and serves what fits behind it", () => {
    const state = reading(
      0,
      2,
      [hold("h", 1, 1, 0)],
      [
        { owner: "w1", permits: 3 },
        { owner: "w2", permits: 1 },
      ],
    ).states.get("k")!;
    expect(freeForWaiters(state, [wait("w1", 3), wait("w2", 1)])).toBe(true);
  });

  it("counts a head that fits as reserving its permits", () => {
    const state = reading(
      0,
      3,
      [hold("h", 1, 1, 0)],
      [
        { owner: "w1", permits: 3 },
        { owner: "w2", permits: 1 },
      ],
    ).states.get("k")!;
    expect(freeForWaiters(state, [wait("w1", 3), wait("w2", 1)])).toBe(false);
  });

  it("sees no idle stretch for a waiter that asks more than the capacity", () => {
    const samples = [0, 100, 900].map((at) => reading(at, 2, [], [{ owner: "w1", permits: 3 }]));
    expect(idleStretches(samples, [wait("w1", 3)], freeForWaiters, canFit)).toEqual([]);
    const fits = samples.map((sample) => ({
      ...sample,
      states: new Map([["k", { ...sample.states.get("k")!, capacity: 3 }]]),
    }));
    expect(idleStretches(fits, [wait("w1", 3)], freeForWaiters, canFit)).toHaveLength(1);
  });

  it("counts permits, not holders", () => {
    const state = reading(0, 3, [hold("h", 1, 3, 0)], [{ owner: "w", permits: 1 }]).states.get(
      "k",
    )!;
    expect(freeForWaiters(state, [wait("w", 1)])).toBe(false);
  });
});

describe("chaos capacity changes: a waiter that no longer fits is told in its bound", () => {
  const waitFor3 = (ended: Partial<LiveWait>): LiveWait => ({
    key: "k",
    owner: "w1",
    isolate: 0,
    shared: false,
    permits: 3,
    waitMs: 3_000,
    startedAt: 0,
    endedAt: 1_200,
    abortedAt: Number.POSITIVE_INFINITY,
    token: undefined,
    liveUntil: 1_200,
    ...ended,
  });
  const samples = [reading(500, 3, []), reading(1_020, 1, []), reading(1_500, 1, [])];
  const request = (sentAt: number, settledAt: number, failed = false): ArmingRequest => ({
    sentAt,
    settledAt,
    leaseMs: 0,
    confirmed: false,
    ...(failed ? { failed } : {}),
  });
  const check = (
    wait: LiveWait,
    requests: readonly ArmingRequest[],
    changes: readonly CapacityChangeRecord[] = shrinkTo1,
  ) =>
    checkCapacityErrors(samples, [wait], {
      requestsOf: () => requests,
      capacityAt: (key, from, to) => capacityCeiling(changes, key, 3, from, to),
      silenceMs: 800,
      answerMs: 100,
    });

  it("accepts SemaphoreCapacityError as the answer to its next attempt", () => {
    const result = check(waitFor3({ error: "SemaphoreCapacityError", endedAt: 1_110 }), [
      request(1_100, 1_105),
    ]);
    expect(result).toMatchObject({ checked: 1, violations: 0 });
  });

  it("sees an attempt answered while it no longer fitted that did not end the wait", () => {
    const timedOut = waitFor3({ error: "LockWaitTimeoutError", endedAt: 3_000, liveUntil: 3_000 });
    const result = check(timedOut, [request(1_100, 1_105), request(1_400, 1_405)]);
    expect(result.violations).toBe(1);
    expect(result.examples[0]).toContain("answered at 1105");
  });

  it("sees a waiter that sent nothing in its bound", () => {
    const slept = waitFor3({ error: "SemaphoreCapacityError", endedAt: 2_500, liveUntil: 2_500 });
    const result = check(slept, [request(2_400, 2_405)]);
    expect(result.violations).toBe(1);
    expect(result.examples[0]).toContain("sent nothing in its bound");
  });

  it("waits past failed requests, and past an answer the capacity may have fitted", () => {
    const late = waitFor3({ error: "SemaphoreCapacityError", endedAt: 2_500, liveUntil: 2_500 });
    expect(check(late, [request(1_100, 2_000, true), request(2_400, 2_405)])).toMatchObject({
      checked: 1,
      violations: 0,
    });
    // A grow back to 3 sent at 1 300 may have run before the attempt at 1 350.
    const back: CapacityChangeRecord[] = [
      ...shrinkTo1,
      { ...shrinkTo1[0]!, sentAt: 1_300, settledAt: 1_400, before: 1, asked: 3, after: 1 },
    ];
    expect(check(late, [request(1_350, 1_360), request(2_400, 2_405)], back)).toMatchObject({
      checked: 1,
      violations: 0,
    });
  });

  it("counts its bound from the answer of a request in flight at the shrink", () => {
    const slow = waitFor3({ error: "SemaphoreCapacityError", endedAt: 2_550, liveUntil: 2_550 });
    const inFlight = [request(1_000, 1_900), request(2_500, 2_505)];
    expect(check(slow, inFlight)).toMatchObject({ checked: 1, violations: 0 });
    const later = [request(1_000, 1_900), request(2_800, 2_805)];
    expect(check({ ...slow, endedAt: 2_850, liveUntil: 2_850 }, later).violations).toBe(1);
  });

  it("leaves alone waits that were served, gave up, or ran out first", () => {
    expect(check(waitFor3({ token: 7 }), []).checked).toBe(0);
    const aborted = waitFor3({ abortedAt: 1_050, liveUntil: 1_050, error: "LockAbortedError" });
    expect(check(aborted, []).checked).toBe(0);
    const short = waitFor3({ error: "LockWaitTimeoutError", waitMs: 1_500, endedAt: 1_500 });
    expect(check({ ...short, liveUntil: 1_500 }, []).checked).toBe(0);
  });
});

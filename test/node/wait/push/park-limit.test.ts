/**
 * How long one park over a subscription may last (subscriptionParkLimitMs): `parkMs` until the
 * wait is twice as long, then half the time waited, or up to the turn the last answer expected
 * within half the whole wait; never more than WAITED_PARK_CAP_MS drawn from either; a fair
 * waiter's limit stays `parkMs` (its parks stay within its grant's window).
 */
import { describe, expect, it } from "vitest";
import {
  subscriptionParkLimitMs,
  WAITED_PARK_CAP_MS,
  WAITED_PARK_SHARE,
} from "../../../../src/wait/push/wake.js";

describe("a park's limit over a subscription", () => {
  it("is parkMs until the wait is twice as long, then a share of the time waited", () => {
    expect(subscriptionParkLimitMs(5_000, 0, false)).toBe(5_000);
    expect(subscriptionParkLimitMs(5_000, 9_999, false)).toBe(5_000);
    expect(subscriptionParkLimitMs(5_000, 16_000, false)).toBe(WAITED_PARK_SHARE * 16_000);
  });

  it("draws at most WAITED_PARK_CAP_MS from the wait, however long", () => {
    expect(subscriptionParkLimitMs(5_000, 60_000, false)).toBe(WAITED_PARK_CAP_MS);
    expect(subscriptionParkLimitMs(5_000, 24 * 3_600_000, false)).toBe(WAITED_PARK_CAP_MS);
    // A longer parkMs, as set, is still the limit.
    expect(subscriptionParkLimitMs(45_000, 24 * 3_600_000, false)).toBe(45_000);
  });

  it("stays parkMs for a fair waiter", () => {
    expect(subscriptionParkLimitMs(5_000, 60_000, true)).toBe(5_000);
    expect(subscriptionParkLimitMs(5_000, 0, true, 9_000, 60_000)).toBe(5_000);
  });

  it("reaches the expected turn of a waiter far back, within a share of the whole wait", () => {
    // 150 places back at 60 ms a cycle: it parks to its turn from its first park on.
    expect(subscriptionParkLimitMs(5_000, 0, false, 9_000, 60_000)).toBe(9_000);
    expect(subscriptionParkLimitMs(5_000, 0, false, 9_000, Number.POSITIVE_INFINITY)).toBe(9_000);
    // A near turn changes nothing: parkMs is the least.
    expect(subscriptionParkLimitMs(5_000, 0, false, 1_200, 60_000)).toBe(5_000);
    // A waitMs of 10 s: half of it at most, so a lost word leaves time to ask again.
    expect(subscriptionParkLimitMs(1_000, 0, false, 9_000, 10_000)).toBe(
      WAITED_PARK_SHARE * 10_000,
    );
    // Never past the cap, whatever the statistics say.
    expect(subscriptionParkLimitMs(5_000, 0, false, 600_000, Number.POSITIVE_INFINITY)).toBe(
      WAITED_PARK_CAP_MS,
    );
    // The longer of the two earned limits.
    expect(subscriptionParkLimitMs(5_000, 40_000, false, 9_000, 60_000)).toBe(20_000);
  });

  it("a sole waiter's attempts grow with the logarithm of its wait", () => {
    // Parks back to back from the first attempt: each ends where the limit drawn at its start says.
    const attemptsFor = (waitMs: number) => {
      let at = 0;
      let attempts = 1;
      while (at < waitMs) {
        at += subscriptionParkLimitMs(5_000, at, false);
        attempts += 1;
      }
      return attempts;
    };
    expect(attemptsFor(45_000)).toBeLessThanOrEqual(9);
    // Ten times the wait, a few more (until the cap, then one per 30 s).
    expect(attemptsFor(300_000)).toBeLessThanOrEqual(attemptsFor(45_000) + 10);
  });
});

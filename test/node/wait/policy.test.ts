import { describe, expect, it } from "vitest";
import { LockInputError } from "../../../src/errors.js";
import { DEFAULT_WAIT_POLICY, resolveWaitPolicy } from "../../../src/wait/policy.js";
import { nextPollDelay } from "../../../src/wait/poll.js";

describe("nextPollDelay", () => {
  const policy = { initialDelayMs: 10, maxDelayMs: 200, maxPolls: 100 };

  it("draws from [1, ceiling] with a ceiling that doubles up to maxDelayMs", () => {
    expect(nextPollDelay(policy, 1, null, 10_000, () => 0.999)).toBe(10);
    expect(nextPollDelay(policy, 2, null, 10_000, () => 0.999)).toBe(20);
    expect(nextPollDelay(policy, 5, null, 10_000, () => 0.999)).toBe(160);
    expect(nextPollDelay(policy, 6, null, 10_000, () => 0.999)).toBe(200);
    expect(nextPollDelay(policy, 60, null, 10_000, () => 0.999)).toBe(200);
    expect(nextPollDelay(policy, 3, null, 10_000, () => 0)).toBe(1);
  });

  it("behind a holder, backs off with the time waited: an eighth to a quarter of it, at most 30 s", () => {
    const hourLease = 3_600_000;
    expect(nextPollDelay(policy, 60, hourLease, 100_000, () => 0, 8_000)).toBe(1_000);
    expect(nextPollDelay(policy, 60, hourLease, 100_000, () => 1, 8_000)).toBe(2_000);
    expect(nextPollDelay(policy, 60, hourLease, 1_000_000, () => 1, 600_000)).toBe(30_000);
    // Short waits keep the doubling backoff.
    expect(nextPollDelay(policy, 60, hourLease, 100_000, () => 0.999, 100)).toBe(200);
    // Never past the lease's end or the deadline.
    expect(nextPollDelay(policy, 60, 700, 100_000, () => 0.999, 60_000)).toBe(701);
    expect(nextPollDelay(policy, 60, hourLease, 900, () => 0.999, 60_000)).toBe(900);
  });

  it("with no holder seen (free for another waiter, or a failed request), keeps the doubling backoff however long it waited", () => {
    // Before: a quarter of the time waited, here 15 s with the lock perhaps free all along.
    expect(nextPollDelay(policy, 60, null, 100_000, () => 0.999, 60_000)).toBe(200);
    expect(nextPollDelay(policy, 60, null, 100_000, () => 0, 60_000)).toBe(1);
  });

  it("never sleeps past the holder's lease or the caller's deadline", () => {
    expect(nextPollDelay(policy, 10, 7, 10_000, () => 0.999)).toBe(8);
    expect(nextPollDelay(policy, 10, 500, 33, () => 0.999)).toBe(33);
    expect(nextPollDelay(policy, 10, 0, 10_000, () => 0.999)).toBe(1);
  });
});

describe("resolveWaitPolicy", () => {
  it("keeps the defaults for missing options and validates the rest", () => {
    expect(resolveWaitPolicy(undefined)).toEqual(DEFAULT_WAIT_POLICY);
    expect(resolveWaitPolicy({ maxPolls: 5 }).maxPolls).toBe(5);
    expect(() => resolveWaitPolicy({ maxPolls: 0 })).toThrow(LockInputError);
    expect(() => resolveWaitPolicy({ initialDelayMs: -1 })).toThrow(LockInputError);
    expect(() => resolveWaitPolicy({ maxdelay: 5 })).toThrow(/unknown option "maxdelay"/);
    expect(resolveWaitPolicy({ outageMs: 0 }).outageMs).toBe(0);
    expect(() => resolveWaitPolicy({ outageMs: -1 })).toThrow(LockInputError);
    expect(() => resolveWaitPolicy({ outageMs: Number.NaN })).toThrow(LockInputError);
  });

  it("raises maxDelayMs to initialDelayMs when given below it", () => {
    expect(resolveWaitPolicy({ initialDelayMs: 50, maxDelayMs: 10 }).maxDelayMs).toBe(50);
  });
});

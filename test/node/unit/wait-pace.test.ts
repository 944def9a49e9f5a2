import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  MAX_PACED_DELAY_MS,
  type PaceHint,
  POLLS_PER_RELEASE,
  pacedPollDelay,
} from "../../../src/wait/pace.js";

/** A lock whose holds last 100 ms (± 4), held for 20 ms so far, seen over a 10 ms round trip. */
const hint = (overrides: Partial<PaceHint> = {}): PaceHint => ({
  waiters: 1,
  holdMs: 100,
  holdDeviationMs: 4,
  heldForMs: 20,
  cycleMs: 110,
  holderTtlMs: 9_000,
  roundTripMs: 10,
  ...overrides,
});

describe("pacedPollDelay", () => {
  it("leaves the waiter to the blind backoff when nothing is learnt or the holder overran", () => {
    expect(pacedPollDelay(hint({ holdMs: -1 }))).toBeUndefined();
    expect(pacedPollDelay(hint({ heldForMs: -1 }))).toBeUndefined();
    expect(pacedPollDelay(hint({ heldForMs: 200 }))).toBeUndefined();
    // Past the usual scatter (8 ms after the expected release) too; within it, it stays.
    expect(pacedPollDelay(hint({ heldForMs: 109 }))).toBeUndefined();
    expect(pacedPollDelay(hint({ heldForMs: 105, roundTripMs: 1 }), () => 0)).toBe(1);
  });

  it("a lone waiter aims just around the expected release, minus its round trip", () => {
    // Release expected 80 ms from now; arrivals from 4 ms before to 8 ms after it.
    expect(pacedPollDelay(hint(), () => 0)).toBe(80 - 4 - 10);
    expect(pacedPollDelay(hint(), () => 0.999)).toBe(Math.ceil(80 - 4 + 12 * 0.999 - 10));
  });

  it("spreads many waiters over later releases, about POLLS_PER_RELEASE per release", () => {
    const waiters = 40;
    const slots = Math.ceil((2 * waiters) / POLLS_PER_RELEASE) - 1;
    // The last slot (random just below 1) lands slots - 1 cycles after the first window.
    const last = pacedPollDelay(hint({ waiters }), () => 0.9999) ?? 0;
    expect(last).toBeGreaterThanOrEqual(80 - 4 + (slots - 1) * 110 - 10);
    expect(last).toBeLessThanOrEqual(80 + 8 + (slots - 1) * 110 - 10 + 1);
    // With few waiters, everyone comes to the next release.
    expect(pacedPollDelay(hint({ waiters: 2 }), () => 0.9999)).toBeLessThan(90);
  });

  it("stays for a hand-off that is about to happen and still in reach", () => {
    // 2 ms before the expected release, 1 ms round trip: ask again right after it.
    const delay = pacedPollDelay(hint({ heldForMs: 98, roundTripMs: 1, waiters: 50 }), () => 0);
    expect(delay).toBe(1);
  });

  it("skips the windows a request sent now could not reach", () => {
    // The release is 2 ms away but the round trip is 30 ms: aim at a later release.
    const delay =
      pacedPollDelay(hint({ heldForMs: 98, roundTripMs: 30, waiters: 1 }), () => 0) ?? 0;
    expect(delay).toBeGreaterThanOrEqual(2 - 4 + 110 - 30);
  });

  it("never sleeps past the holder's lease, past the cap, or less than 1 ms", () => {
    fc.assert(
      fc.property(
        fc.record({
          waiters: fc.integer({ min: 0, max: 10_000 }),
          holdMs: fc.integer({ min: 1, max: 100_000 }),
          holdDeviationMs: fc.integer({ min: -1, max: 100_000 }),
          heldForMs: fc.integer({ min: 0, max: 200_000 }),
          cycleMs: fc.integer({ min: -1, max: 200_000 }),
          holderTtlMs: fc.option(fc.integer({ min: 0, max: 100_000 }), { nil: null }),
          roundTripMs: fc.integer({ min: 0, max: 5_000 }),
        }),
        fc.double({ min: 0, max: 0.9999, noNaN: true }),
        (given, draw) => {
          const delay = pacedPollDelay(given, () => draw);
          if (delay === undefined) return;
          expect(Number.isInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(1);
          expect(delay).toBeLessThanOrEqual(MAX_PACED_DELAY_MS);
          if (given.holderTtlMs !== null) {
            expect(delay).toBeLessThanOrEqual(Math.max(1, given.holderTtlMs + 1));
          }
        },
      ),
    );
  });
});

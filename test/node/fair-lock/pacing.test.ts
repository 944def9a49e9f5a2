/** The fair lock's queue-directed polling, as a pure function: one waiter aims at each release. */
import { describe, expect, it } from "vitest";
import { DEFAULT_WAIT_POLICY } from "../../../src/wait/policy.js";
import {
  aimLateMs,
  TurnPacer,
  type TurnState,
  type TurnView,
  turnDelay,
} from "../../../src/wait/poll.js";

const fair: TurnState = {
  policy: DEFAULT_WAIT_POLICY,
  refreshMs: 1_666,
  poll: 1,
  roundTripMs: 10,
  perRelease: 1,
};
/** Holds of 100 ms (± 4), the holder 40 ms in, hand-offs every 110 ms. */
const busy: TurnView = {
  position: 0,
  locked: true,
  holderTtlMs: 30_000,
  holdMs: 100,
  holdDeviationMs: 4,
  cycleMs: 110,
  heldForMs: 40,
};
const top = () => 1;

describe("queue-directed polling of the fair lock", () => {
  it("sends the head's poll to land just after the holder's expected release", () => {
    // Release expected in 60 ms; a little late (1 + 4, one deviation); minus one round trip.
    expect(turnDelay(busy, fair, top)).toBe(60 + 5 - 10);
  });

  it("sends the second straight at the release after next, later by its larger uncertainty", () => {
    expect(turnDelay({ ...busy, position: 1 }, fair, top)).toBe(
      Math.ceil(60 + 110 + aimLateMs(4, 1) - 10),
    );
  });

  it("brings waiters further back to just after their predecessor's release", () => {
    // Position 3 waits for release 3; release 2 is due at 60 + 2 × 110.
    expect(turnDelay({ ...busy, position: 3 }, fair, top)).toBe(
      Math.ceil(60 + 2 * 110 + aimLateMs(4, 2) - 10),
    );
  });

  it("asks again soon when the lock is free but the head has not taken it yet", () => {
    const free: TurnView = { ...busy, locked: false, holderTtlMs: null, heldForMs: null };
    // At the head, refused (a reservation for someone else): the first backoff ceiling.
    expect(turnDelay(free, fair, top)).toBe(DEFAULT_WAIT_POLICY.initialDelayMs);
    // Second in line: the head takes it now; aim at its expected release.
    expect(turnDelay({ ...free, position: 1 }, fair, top)).toBe(100 + 5 + 5 - 10);
  });

  it("never sleeps past a third of the waiter timeout, nor past the holder's lease at the head", () => {
    expect(turnDelay({ ...busy, position: 50 }, fair, top)).toBe(fair.refreshMs);
    expect(turnDelay({ ...busy, holderTtlMs: 5, heldForMs: 500 }, fair, top)).toBe(6);
    expect(turnDelay({ ...busy, holdMs: 10_000, holderTtlMs: 30 }, fair, top)).toBe(31);
  });

  it("counts the polls of one acquisition for its fallback backoff", () => {
    const fresh: TurnView = { ...busy, holdMs: null };
    const pacer = new TurnPacer(DEFAULT_WAIT_POLICY, 1_666, 1, top);
    expect(pacer.next(fresh, 10)).toBe(10);
    expect(pacer.next(fresh, 10)).toBe(20);
    expect(pacer.next(busy, 10)).toBe(55);
  });
});

/** The queue-aware pacing of fair-lock waiters, as a pure function. */
import { describe, expect, it } from "vitest";
import { DEFAULT_WAIT_POLICY } from "../../../src/wait/policy.js";
import {
  type PaceState,
  QueuePacer,
  type QueueView,
  queuePollDelay,
} from "../../../src/wait/queue-pace.js";

const state: PaceState = {
  policy: DEFAULT_WAIT_POLICY,
  refreshMs: 1_666,
  poll: 1,
  roundTripMs: 10,
};
const busy: QueueView = {
  position: 0,
  locked: true,
  holderTtlMs: 30_000,
  holdMs: 100,
  gapMs: 20,
  heldForMs: 40,
};
const top = () => 1; // the largest jitter draw
const bottom = () => 0;

describe("queue-aware poll pacing", () => {
  it("sends the head's next poll to land at the holder's expected release", () => {
    // 100 ms usual hold, held for 40: release expected in 60 ms; minus one round trip.
    expect(queuePollDelay(busy, state, top)).toBe(50);
  });

  it("lets waiters further back sleep until half-way through their predecessor's hold", () => {
    // Predecessor (position 1 → the head) starts at 60 + 20; its mid-hold is 50 ms later.
    expect(queuePollDelay({ ...busy, position: 1 }, state, top)).toBe(60 + 20 + 50 - 10);
    // Each further place adds one turn (hold + gap).
    expect(queuePollDelay({ ...busy, position: 3 }, state, top)).toBe(60 + 20 + 2 * 120 + 50 - 10);
  });

  it("backs off like a plain waiter when the lock is free but a waiter ahead has not taken it", () => {
    // The head may be dead (pruned only after its waiter timeout): no hand-off pace to follow.
    const stalled: QueueView = {
      ...busy,
      position: 1,
      locked: false,
      holderTtlMs: null,
      heldForMs: null,
    };
    expect(queuePollDelay(stalled, { ...state, poll: 1 }, top)).toBe(10);
    expect(queuePollDelay(stalled, { ...state, poll: 4 }, top)).toBe(80);
    expect(queuePollDelay(stalled, { ...state, poll: 20 }, top)).toBe(
      DEFAULT_WAIT_POLICY.maxDelayMs,
    );
  });

  it("polls densely just past the expected release, sparser as a long hold goes on", () => {
    const justOverdue = queuePollDelay({ ...busy, heldForMs: 105 }, state, top);
    expect(justOverdue).toBe(DEFAULT_WAIT_POLICY.initialDelayMs);
    const longOverdue = queuePollDelay({ ...busy, heldForMs: 100 + 600 }, state, top);
    expect(longOverdue).toBe(150);
    const veryLong = queuePollDelay({ ...busy, heldForMs: 100 + 60_000 }, state, top);
    expect(veryLong).toBe(DEFAULT_WAIT_POLICY.maxDelayMs);
    expect(queuePollDelay({ ...busy, heldForMs: 700 }, state, bottom)).toBe(1);
  });

  it("never sleeps past a third of the waiter timeout, nor past the holder's lease at the head", () => {
    expect(queuePollDelay({ ...busy, position: 50 }, state, top)).toBe(state.refreshMs);
    expect(queuePollDelay({ ...busy, holderTtlMs: 5, heldForMs: 500 }, state, top)).toBe(6);
    expect(queuePollDelay({ ...busy, holdMs: 10_000, holderTtlMs: 30 }, state, top)).toBe(20);
  });

  it("falls back to the plain lock's full-jitter backoff before anything is learnt", () => {
    const fresh = { ...busy, holdMs: null, gapMs: null, heldForMs: null };
    expect(queuePollDelay(fresh, state, top)).toBe(DEFAULT_WAIT_POLICY.initialDelayMs);
    expect(queuePollDelay(fresh, { ...state, poll: 10 }, top)).toBe(DEFAULT_WAIT_POLICY.maxDelayMs);
    expect(queuePollDelay({ ...fresh, holderTtlMs: 3 }, { ...state, poll: 10 }, top)).toBe(4);
  });

  it("polls less often the further back a waiter is", () => {
    const delays = [0, 1, 2, 4, 8].map((position) =>
      queuePollDelay({ ...busy, position, heldForMs: 0 }, { ...state, refreshMs: 100_000 }, top),
    );
    for (let i = 1; i < delays.length; i++) expect(delays[i]).toBeGreaterThan(delays[i - 1]!);
  });

  it("smooths round trips across the polls of one acquisition", () => {
    const pacer = new QueuePacer(DEFAULT_WAIT_POLICY, 1_666, top);
    expect(pacer.next(busy, 10)).toBe(50);
    // A slow round trip moves the estimate a quarter of the way: (3 × 10 + 50) / 4 = 20.
    expect(pacer.next(busy, 50)).toBe(40);
  });
});

/** Queue-directed polling as a pure function: given a busy reply, the delay before the next poll. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_WAIT_POLICY } from "../../../src/wait/policy.js";
import {
  aimAfterMs,
  aimLateMs,
  LONG_SLEEP_SHARE,
  TurnPacer,
  type TurnState,
  type TurnView,
  turnDelay,
  WAITED_BACKOFF_CAP_MS,
} from "../../../src/wait/poll.js";
import { grantedAtOrBefore } from "../../../src/wait/push/parking.js";

/** Holds of 30 ms (± 2), the holder 10 ms in, hand-offs every 35 ms, a 10 ms round trip. */
const view = (overrides: Partial<TurnView> = {}): TurnView => ({
  position: 0,
  locked: true,
  holderTtlMs: 9_000,
  holdMs: 30,
  holdDeviationMs: 2,
  cycleMs: 35,
  heldForMs: 10,
  ...overrides,
});
const plain: TurnState = {
  policy: DEFAULT_WAIT_POLICY,
  refreshMs: 1_666,
  poll: 1,
  roundTripMs: 10,
  perRelease: 2,
};
const top = () => 1; // the largest jitter draw

describe("turnDelay (plain lock: two waiters per release)", () => {
  it("backs off blindly before anything is learnt, or when the reply carries no queue", () => {
    expect(turnDelay(view({ holdMs: null }), plain, top)).toBe(DEFAULT_WAIT_POLICY.initialDelayMs);
    expect(turnDelay(view({ position: -1 }), { ...plain, poll: 10 }, top)).toBe(
      DEFAULT_WAIT_POLICY.maxDelayMs,
    );
    expect(turnDelay(view({ position: -1, holderTtlMs: 3 }), { ...plain, poll: 10 }, top)).toBe(4);
  });

  it("sends the head just after the expected release, the second a little later", () => {
    // Release expected 20 ms from the server's reply; the poll takes a round trip to get there.
    // The head one deviation (2 ms) less late than the usual aim (1 + 2), the second one more.
    expect(turnDelay(view(), plain, top)).toBe(20 + 1 - 10);
    expect(turnDelay(view({ position: 1 }), plain, top)).toBe(20 + 5 - 10);
    expect(aimAfterMs(2, 0, "only")).toBe(3);
  });

  it("sends a lone head at the usual aim: nobody covers the late side", () => {
    expect(turnDelay(view({ waiters: 1 }), plain, top)).toBe(20 + aimAfterMs(2, 0, "only") - 10);
    expect(turnDelay(view({ waiters: 2 }), plain, top)).toBe(20 + 1 - 10);
  });

  it("sends the head at once when its aim is out of reach: the release may not have come yet", () => {
    // 1 ms of hold left, a 10 ms round trip: its aim (2 ms from the server's reply) has passed by
    // the time the reply is back; it does not leave this release to the late side alone.
    expect(turnDelay(view({ heldForMs: 29 }), plain, top)).toBe(1);
  });

  it("brings the third waiter straight to the release after next", () => {
    // Position 2 aims at release 1 (two waiters aim at each release, one of them takes it).
    expect(turnDelay(view({ position: 2 }), plain, top)).toBe(
      Math.ceil(20 + 35 + aimAfterMs(2, 1, "late") - 10),
    );
  });

  it("brings waiters further back to just after the release before theirs", () => {
    // Position 6 aims at release 5: the release before it (4) is due at 20 + 4 × 35.
    const release4 = 20 + 4 * 35;
    expect(turnDelay(view({ position: 6 }), plain, top)).toBe(
      Math.ceil(release4 + Math.min(aimLateMs(2, 4), 35 - 10 - aimLateMs(2, 0)) - 10),
    );
  });

  it("counts the next holder's hold when the lock is free but reserved for the head", () => {
    const free = view({ locked: false, holderTtlMs: null, heldForMs: null, position: 2 });
    // The head takes it now; its release is due a hold (plus the usual lateness) from now.
    expect(turnDelay(free, plain, top)).toBe(30 + aimLateMs(2, 0) + aimAfterMs(2, 0, "late") - 10);
    // At the reservation's place, yet refused (the queue moved): ask again soon.
    expect(turnDelay({ ...free, position: 0 }, plain, top)).toBe(
      DEFAULT_WAIT_POLICY.initialDelayMs,
    );
  });

  it("polls densely just past an overrunning hold, sparser as it goes on, never past the lease", () => {
    expect(turnDelay(view({ heldForMs: 30 + 100 }), plain, top)).toBe(25);
    expect(turnDelay(view({ heldForMs: 30 + 1_000 }), plain, top)).toBe(
      DEFAULT_WAIT_POLICY.maxDelayMs,
    );
    // A minute late: a quarter of the overrun, within the place kept (issue 43: before, 250 ms).
    expect(turnDelay(view({ heldForMs: 30 + 60_000 }), plain, top)).toBe(plain.refreshMs);
    expect(
      turnDelay(
        view({ heldForMs: 30 + 60_000, holderTtlMs: 60_000 }),
        { ...plain, keptExtraMs: 20_000 },
        top,
      ),
    ).toBe(15_000);
    expect(turnDelay(view({ heldForMs: 30 + 100, holderTtlMs: 3 }), plain, top)).toBe(4);
  });

  it("caps the cycle so that one slow hand-off does not push every aim later", () => {
    const slow = turnDelay(view({ position: 2, cycleMs: 500 }), plain, top);
    const capped = turnDelay(view({ position: 2, cycleMs: 30 + 2 * aimLateMs(2, 0) }), plain, top);
    expect(slow).toBe(capped);
  });

  it("aims at most maxDelayMs late when holds vary widely: a hold ended early leaves the lock idle meanwhile", () => {
    // The fair lock's second in line (its turn the release after next): the holder 100 ms into a
    // 600 ms average hold (deviation 400), the next hold as long. Expected: 500 + 600 ms; the
    // usual aim adds 1 + 400·√2 ≈ 567 ms, which a long chaos run saw leave a free lock idle 1.35 s.
    const fair: TurnState = { ...plain, perRelease: 1 };
    const wide = view({
      position: 1,
      holdMs: 600,
      holdDeviationMs: 400,
      cycleMs: 600,
      heldForMs: 100,
    });
    expect(turnDelay(wide, fair, top)).toBe(500 + 600 + DEFAULT_WAIT_POLICY.maxDelayMs - 10);
  });

  it("waits longer the further back a waiter is, never past a third of the waiter timeout", () => {
    const delays = [1, 2, 4, 8, 16].map((position) =>
      turnDelay(view({ position }), { ...plain, refreshMs: 100_000 }, top),
    );
    for (let i = 1; i < delays.length; i++) expect(delays[i]).toBeGreaterThan(delays[i - 1]!);
    expect(turnDelay(view({ position: 200 }), plain, top)).toBe(plain.refreshMs);
  });

  it("always answers a whole delay from 1 ms to refreshMs, at the head within the lease", () => {
    const known = fc.option(fc.integer({ min: 0, max: 100_000 }), { nil: null });
    fc.assert(
      fc.property(
        fc.integer({ min: -1, max: 500 }),
        fc.boolean(),
        fc.option(fc.integer({ min: 0, max: 100_000 }), { nil: null }),
        known,
        known,
        known,
        known,
        fc.integer({ min: 0, max: 5_000 }),
        fc.constantFrom<1 | 2>(1, 2),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (
          position,
          locked,
          holderTtlMs,
          holdMs,
          dev,
          cycleMs,
          heldForMs,
          roundTripMs,
          perRelease,
          draw,
        ) => {
          const delay = turnDelay(
            { position, locked, holderTtlMs, holdMs, holdDeviationMs: dev, cycleMs, heldForMs },
            { ...plain, roundTripMs, perRelease },
            () => draw,
          );
          expect(Number.isInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(1);
          expect(delay).toBeLessThanOrEqual(plain.refreshMs);
          // guard: the holder's lease bounds the delay only for the head, and only when known.
          if (position === 0 && holderTtlMs !== null) {
            expect(delay).toBeLessThanOrEqual(Math.max(1, holderTtlMs + 1));
          }
        },
      ),
    );
  });
});

describe("grantedAtOrBefore (push hand-off)", () => {
  it("never lets a handed-off hold's lease end later on the client than on the server", () => {
    const leaseMs = 200;
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }), // µs from the send to the registration's arrival
        fc.integer({ min: 0, max: 10_000_000 }), // µs from the registration to the grant
        fc.integer({ min: 0, max: 999 }), // µs into the client's millisecond at the send
        fc.integer({ min: -5_000, max: 5_000 }), // ms the server's clock is ahead (same phase)
        fc.integer({ min: 0, max: 999 }), // µs the grant script ran before it read TIME
        (transitUs, waitedUs, phaseUs, serverAheadMs, scriptUs) => {
          const sentAtUs = 1_000_000_000 + phaseUs;
          const registeredUs = sentAtUs + transitUs;
          const grantedUs = registeredUs + waitedUs;
          // The server reports the difference of two whole-ms readings of its clock (TIME)…
          const serverMs = (us: number) => Math.floor(us / 1000) + serverAheadMs;
          const since = serverMs(grantedUs) - serverMs(registeredUs);
          // …and ends the lease a lease after the grant script's start (frozen script time).
          // (The grant script starts after the registration's script ended.)
          const scriptStartUs = Math.max(registeredUs, grantedUs - scriptUs);
          const serverEndUs = (serverMs(scriptStartUs) + leaseMs - serverAheadMs) * 1000;
          const clientSentAt = Math.floor(sentAtUs / 1000);
          const clientEnd =
            grantedAtOrBefore(clientSentAt, { sinceRegistrationMs: since }) + leaseMs;
          expect(clientEnd * 1000).toBeLessThanOrEqual(serverEndUs);
        },
      ),
    );
  });
});

describe("TurnPacer: a lock that stays free for somebody else", () => {
  const free = view({
    position: 1,
    locked: false,
    holderTtlMs: null,
    heldForMs: null,
    holdMs: 2,
    holdDeviationMs: 0,
    cycleMs: 3,
  });

  it("backs off, doubling, when the waiter owed the lock does not take it (crashed)", () => {
    const pacer = new TurnPacer(DEFAULT_WAIT_POLICY, 1_666, 1, top);
    const delays = Array.from({ length: 8 }, () => pacer.next(free, 1));
    // The first sight is the usual hand-off aim (the head is taking it now); after that the
    // ceiling doubles from initialDelayMs up to maxDelayMs, so a dead head's waiter timeout
    // (pruned after 1 s here) costs a handful of polls, not the whole budget.
    expect(delays[0]).toBeLessThan(DEFAULT_WAIT_POLICY.initialDelayMs);
    expect(delays.slice(1)).toEqual([10, 20, 40, 80, 160, 250, 250]);
    const sentAt = delays.map((_, index) => delays.slice(0, index + 1).reduce((a, b) => a + b));
    const pollsInOneSecond = sentAt.filter((at) => at <= 1_000).length;
    expect(pollsInOneSecond).toBeLessThan(10);
  });

  it("paces as usual again once a holder is seen", () => {
    const pacer = new TurnPacer(DEFAULT_WAIT_POLICY, 1_666, 1, top);
    for (let i = 0; i < 5; i++) pacer.next(free, 1);
    const held: TurnView = { ...free, locked: true, holderTtlMs: 30_000, heldForMs: 0 };
    const state: TurnState = { ...plain, perRelease: 1, roundTripMs: 1, poll: 6, freeInARow: 0 };
    expect(pacer.next(held, 1)).toBe(turnDelay(held, state, top));
  });
});

describe("TurnPacer: a waiter far back", () => {
  // 200 waiters ahead, a hand-off every 35 ms: the turn is about 7 s off.
  const farBack = view({ position: 200 });

  it("of the plain lock asks to be kept longer, then sleeps past a third of the timeout", () => {
    const pacer = new TurnPacer(DEFAULT_WAIT_POLICY, 1_666, 2, top, true);
    expect(pacer.keepExtraMs).toBe(0);
    // The ticket's place is kept the waiter timeout only: the first sleep stays within a third.
    expect(pacer.next(farBack, 10)).toBe(1_666);
    // Its next attempt asks for one more third (the most: its turn is further off than that).
    expect(pacer.keepExtraMs).toBe(1_666);
    // So it sleeps past a third of the timeout, half the way beyond it, at most two thirds.
    expect(pacer.next(farBack, 10)).toBe(2 * 1_666);
    const nearer = view({ position: 60 });
    const wanted = turnDelay(nearer, { ...plain, refreshMs: 1_000_000 }, top);
    expect(wanted).toBeLessThan(3 * 1_666);
    expect(pacer.next(nearer, 10)).toBe(Math.ceil(1_666 + LONG_SLEEP_SHARE * (wanted - 1_666)));
    // Near its turn it asks for nothing more.
    pacer.next(view({ position: 3 }), 10);
    expect(pacer.keepExtraMs).toBe(0);
  });

  it("of a kind that keeps the waiter timeout (the fair lock) polls every third of it", () => {
    const pacer = new TurnPacer(DEFAULT_WAIT_POLICY, 1_666, 1, top);
    expect([pacer.next(farBack, 10), pacer.next(farBack, 10)]).toEqual([1_666, 1_666]);
    expect(pacer.keepExtraMs).toBe(0);
  });

  it("never sleeps longer than twice a third of the timeout, however far its turn", () => {
    const pacer = new TurnPacer(DEFAULT_WAIT_POLICY, 1_666, 2, top, true);
    const sleeps = Array.from({ length: 5 }, () => pacer.next(view({ position: 100_000 }), 10));
    expect(sleeps).toEqual([1_666, 3_332, 3_332, 3_332, 3_332]);
    expect(pacer.keepExtraMs).toBe(1_666);
  });
});

describe("a blind wait behind a long hold (issue 43)", () => {
  /** Requests of a sole waiter at the head over `waitMs` of simulated time, 5 ms round trips. */
  function requestsOver(waitMs: number, pacer: TurnPacer, holderEndsAt: (t: number) => number) {
    let t = 0;
    let requests = 0;
    let longest = 0;
    let keptTooShort = 0;
    let keptUntil = Number.POSITIVE_INFINITY;
    while (t < waitMs) {
      requests += 1;
      t += 5;
      // The place this attempt asked the server to keep: the waiter timeout plus the extra.
      if (t > keptUntil) keptTooShort += 1;
      keptUntil = t + 5_000 + pacer.keepExtraMs;
      const blind = { ...view({ holdMs: null, holderTtlMs: holderEndsAt(t) - t }), waiters: 1 };
      const sleep = pacer.next(blind, 5, t);
      longest = Math.max(longest, sleep);
      t += sleep;
    }
    return { requests, longest, keptTooShort };
  }
  const draws = [() => 0, () => 0.5, () => 0.999];
  const hourLease = () => 3_600_000;
  const watchdog = (t: number) => t + 30_000 - (t % 10_000);

  it("the plain lock: requests grow with the logarithm of the wait, its place kept throughout", () => {
    for (const draw of draws) {
      const minute = requestsOver(
        60_000,
        new TurnPacer(DEFAULT_WAIT_POLICY, 1_666, 2, draw, true),
        hourLease,
      );
      const hour = requestsOver(
        3_600_000,
        new TurnPacer(DEFAULT_WAIT_POLICY, 1_666, 2, draw, true),
        hourLease,
      );
      // Before: a sleep of at most 250 ms, 240 requests a minute.
      expect(minute.requests).toBeLessThanOrEqual(70);
      expect(hour.requests).toBeLessThanOrEqual(300);
      expect(hour.longest).toBeLessThanOrEqual(WAITED_BACKOFF_CAP_MS);
      expect(hour.longest).toBeGreaterThan(14_000);
      expect(hour.keptTooShort).toBe(0);
    }
  });

  it("behind a watchdog holder, never past its lease end", () => {
    const hour = requestsOver(
      3_600_000,
      new TurnPacer(DEFAULT_WAIT_POLICY, 1_666, 2, () => 0.999, true),
      watchdog,
    );
    expect(hour.requests).toBeLessThanOrEqual(300);
    expect(hour.longest).toBeLessThanOrEqual(30_001);
  });

  it("the fair lock keeps its place by polling every third of the waiter timeout", () => {
    const hour = requestsOver(
      3_600_000,
      new TurnPacer(DEFAULT_WAIT_POLICY, 1_666, 1, () => 0.999, false),
      hourLease,
    );
    expect(hour.longest).toBeLessThanOrEqual(1_666);
    expect(hour.keptTooShort).toBe(0);
    // About 2 200: within the default budget, as the budget's JSDoc says.
    expect(hour.requests).toBeLessThan(2_300);
    expect(hour.requests).toBeLessThan(DEFAULT_WAIT_POLICY.maxPolls);
  });
});

/**
 * Measures what the queue-aware pacing buys: requests per acquisition and the hand-off cycle of
 * the fair lock, paced and (for comparison) polling blindly with the plain full-jitter backoff,
 * next to the plain lock, with the same contenders, holds and round trips. The figures are
 * printed; the test asserts what must hold on any machine: no overlap, and pacing spends fewer
 * requests than blind polling.
 *
 *   npx vitest run --project node test/node/fair-lock/handoff-cost.test.ts
 */
import { describe, expect, it, vi } from "vitest";
import { LockClient, type LockHandle } from "../../../src/index.js";
import { DEFAULT_WAIT_POLICY } from "../../../src/wait/policy.js";
import { nextPollDelay, TurnPacer } from "../../../src/wait/poll.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";

const HOLD_MS = 10;
const LATENCY_MS = 10;

type Variant = "lock" | "fairLock" | "fairLock, blind";

interface Figures {
  requestsPerAcquisition: number;
  cycleMs: number;
  roundTripMs: number;
  /** (hold + one round trip) / measured cycle: 1 is the polling bound of DESIGN.md. */
  efficiency: number;
  overlaps: number;
}

// One backend is enough for a measurement: the first (real Redis when installed).
const kind = backendKindsUnderTest()[0]!;

describe(`fair-lock hand-off cost under contention on ${kind}`, () => {
  const bed = useTestBed(kind, { faults: { latencyMs: LATENCY_MS } });

  async function measure(variant: Variant, contenders: number, rounds: number): Promise<Figures> {
    const prefix = freshPrefix();
    const clients = Array.from(
      { length: contenders },
      () =>
        new LockClient({ redis: bed.redis(), prefix, wait: { mode: "poll", maxPolls: 100_000 } }),
    );
    const lockOf = (client: LockClient) =>
      variant === "lock" ? client.lock("hot") : client.fairLock("hot");
    // Warm the script caches (and the hold statistics), then time a round trip.
    for (const client of clients) {
      const held = await lockOf(client).acquire({ leaseMs: 5_000 });
      await sleepMs(HOLD_MS);
      await held.release();
    }
    const probes: number[] = [];
    for (let i = 0; i < 9; i++) {
      const probeStart = Date.now();
      await lockOf(clients[0]!).isLocked();
      probes.push(Date.now() - probeStart);
    }
    const roundTripMs = probes.sort((a, b) => a - b)[4]!;

    let inside = 0;
    let overlaps = 0;
    const before = bed.requests();
    const started = Date.now();
    await Promise.all(
      clients.map(async (client) => {
        for (let round = 0; round < rounds; round++) {
          const held: LockHandle = await lockOf(client).acquire({ leaseMs: 10_000 });
          inside += 1;
          if (inside > 1) overlaps += 1;
          await sleepMs(HOLD_MS);
          inside -= 1;
          await held.release();
        }
      }),
    );
    const acquisitions = contenders * rounds;
    const cycleMs = (Date.now() - started) / acquisitions;
    return {
      requestsPerAcquisition: (bed.requests() - before) / acquisitions,
      cycleMs,
      roundTripMs,
      efficiency: (HOLD_MS + roundTripMs) / cycleMs,
      overlaps,
    };
  }

  /** The fair lock's waiters ignore what the queue tells them and back off blindly. */
  function blindPacing() {
    const polls = new WeakMap<object, number>();
    return vi.spyOn(TurnPacer.prototype, "next").mockImplementation(function (this: object) {
      const poll = (polls.get(this) ?? 0) + 1;
      polls.set(this, poll);
      return nextPollDelay(DEFAULT_WAIT_POLICY, poll, null, Number.POSITIVE_INFINITY);
    });
  }

  it.each([
    [8, 6],
    [16, 3],
  ])(
    "with %i contenders: pacing spends fewer requests than blind polling",
    async (contenders, rounds) => {
      const figures = new Map<Variant, Figures>();
      figures.set("lock", await measure("lock", contenders, rounds));
      const spy = blindPacing();
      try {
        figures.set("fairLock, blind", await measure("fairLock", contenders, rounds));
      } finally {
        spy.mockRestore();
      }
      figures.set("fairLock", await measure("fairLock", contenders, rounds));
      const lines = [...figures].map(
        ([variant, f]) =>
          `${variant.padEnd(16)} ${f.requestsPerAcquisition.toFixed(2).padStart(6)} req/acq ` +
          `${f.cycleMs.toFixed(1).padStart(6)} ms/cycle  efficiency ` +
          `${(100 * f.efficiency).toFixed(0).padStart(3)}%  (round trip ${f.roundTripMs} ms)`,
      );
      console.log(
        `${contenders} contenders × ${rounds} rounds, hold ${HOLD_MS} ms, +${LATENCY_MS} ms per request\n` +
          lines.join("\n"),
      );
      for (const f of figures.values()) expect(f.overlaps).toBe(0);
      const paced = figures.get("fairLock")!;
      const blind = figures.get("fairLock, blind")!;
      expect(paced.requestsPerAcquisition).toBeLessThan(blind.requestsPerAcquisition);
    },
    120_000,
  );
});

/**
 * A waiter's first wait over a subscription (issue 43): its stream opens at the first busy
 * answer and its sleep ends when the server confirms the stream, so that its next attempt parks.
 * Before, the stream opened only at the next attempt and the first sleep was its turn's
 * estimate: a waiter far back slept toward its expected turn (a second or more) while the lock
 * might be released and, for a fair lock, kept for it idle.
 */
import { describe, expect, it } from "vitest";
import type { LockClient, LockEvent, LockHandle } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { tapped } from "../../support/tapped-redis.js";
import { freshPrefix, sleepMs, type TestBed, until, useTestBed } from "./testbed.js";

type WaitStepEvent = Extract<LockEvent, { type: "waitStep" }>;

interface Exclusive {
  acquire(options: { leaseMs: number; waitMs?: number; signal?: AbortSignal }): Promise<LockHandle>;
}

const KINDS = [
  { kind: "lock", lockOf: (client: LockClient): Exclusive => client.lock("job") },
  { kind: "fair lock", lockOf: (client: LockClient): Exclusive => client.fairLock("job") },
] as const;

/** Holds of this length, learnt by the lock's statistics, put a waiter 3 back ~1 s from its turn. */
const HOLD_MS = 400;
const WAITERS_AHEAD = 3;

/** Parked registrations that listen on a hand-off channel. */
async function subscribedWaiters(bed: TestBed, prefix: string): Promise<number> {
  const parked = await bed.redis().hgetall<Record<string, string>>(`${prefix}:{job}:parked`);
  return Object.values(parked ?? {}).filter((value) => / sub\d+\.\d+$/.test(String(value))).length;
}

describe.each(backendKindsUnderTest())(
  "a waiter's first wait over a subscription on %s",
  (backend) => {
    const bed = useTestBed(backend, { profile: "upstash" });

    it.each(KINDS)(
      "$kind: far back, it parks at once instead of sleeping its turn",
      async ({ lockOf }) => {
        const prefix = freshPrefix();
        const holder = bed.client({ prefix, scriptKeyLocking: true });
        const pollers = Array.from({ length: WAITERS_AHEAD }, () =>
          bed.client({ prefix, scriptKeyLocking: true, wait: { mode: "poll" } }),
        );
        // The statistics: holds of HOLD_MS, each taken by a waiter that had waited.
        const first = await lockOf(holder).acquire({ leaseMs: 10_000 });
        const chain = pollers.map(async (poller) => {
          const held = await lockOf(poller).acquire({ leaseMs: 10_000, waitMs: 10_000 });
          await sleepMs(HOLD_MS);
          await held.release();
        });
        await sleepMs(HOLD_MS);
        await first.release();
        await Promise.all(chain);

        // Now a holder and WAITERS_AHEAD polling waiters queued ahead of a fresh client on the defaults.
        const held = await lockOf(holder).acquire({ leaseMs: 10_000 });
        const giveUp = new AbortController();
        const ahead = pollers.map((poller) =>
          lockOf(poller)
            .acquire({ leaseMs: 10_000, waitMs: 10_000, signal: giveUp.signal })
            .catch(() => undefined),
        );
        await sleepMs(200);
        const tappedRedis = tapped(bed.redis());
        let scripts = 0;
        const waiter = bed.client({
          prefix,
          redis: tappedRedis.redis,
          observer: { onAttempt: () => (scripts += 1) },
        });
        const steps: { at: number; step: WaitStepEvent }[] = [];
        waiter.on("waitStep", (step) => steps.push({ at: Date.now(), step }));
        const waiting = lockOf(waiter).acquire({ leaseMs: 10_000, waitMs: 20_000 });
        await until(() => steps.length >= 1);
        // What its turn's estimate made of its place: the sleep a polling first wait took.
        const turnEstimateMs = steps[0]!.step.delayMs;
        expect(turnEstimateMs).toBeGreaterThan(700);
        // A quarter of a second into the wait (its turn's estimate is several times that), the
        // waiters ahead leave and the holder releases: the waiter's turn.
        await sleepMs(250);
        const parkedBeforeRelease = await subscribedWaiters(bed, prefix);
        giveUp.abort();
        await Promise.all(ahead);
        const releasedAt = Date.now();
        await held.release();
        const handle = await waiting;
        const servedAfterMs = Date.now() - releasedAt;
        const scriptsToHold = scripts;
        await handle.release();

        // Served by the release's word, far sooner than a sleep of its turn's estimate would allow.
        const seen = `its turn's estimate ${turnEstimateMs} ms, ${scriptsToHold} attempts`;
        expect(servedAfterMs, seen).toBeLessThan(300);
        // Registered to be told before the release, within a few round trips of its first answer.
        expect(parkedBeforeRelease).toBe(1);
        // Its first sleep ended when the stream was confirmed: the second attempt registered it.
        const [firstStep, secondStep] = steps;
        expect(firstStep!.step).toMatchObject({ attempt: 1, answer: "busy", why: "park" });
        expect(secondStep!.step).toMatchObject({ attempt: 2, answer: "busy", why: "park" });
        expect(secondStep!.at - firstStep!.at).toBeLessThan(300);
        expect(steps.some(({ step }) => step.why === "turn")).toBe(false);
        expect(steps.at(-1)!.step).toMatchObject({ answer: "acquired" });
        // No request more than the stream-after-a-sleep: two attempts and one SUBSCRIBE.
        expect(scriptsToHold).toBe(2);
        expect(tappedRedis.tap.subscribes).toBe(1);
        // Its stream lingers 1 s after the wait: closed by the server's end, it would log an error.
        await until(() => bed.server.stats.snapshot().streams.open === 0);
      },
    );
  },
);

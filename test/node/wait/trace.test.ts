/**
 * The trace of a wait (`waitStep` events, issue 45): every attempt's answer, the sleep chosen
 * after it and why, so that "why did my acquire sleep 80 ms?" has an answer at run time.
 */
import { Redis } from "@upstash/redis";
import { afterEach, describe, expect, it } from "vitest";
import type { LockClient, LockEvent, WaitWhy } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";

type WaitStepEvent = Extract<LockEvent, { type: "waitStep" }>;

function traced(client: LockClient): WaitStepEvent[] {
  const steps: WaitStepEvent[] = [];
  client.on("waitStep", (step) => steps.push(step));
  return steps;
}

const SCRIPTS = ["eval", "evalsha"];

describe.each(backendKindsUnderTest())("the trace of a wait on %s", (kind) => {
  const bed = useTestBed(kind, { profile: "upstash" });
  afterEach(() => bed.server.faults.disable());

  it("polling: each busy step says how long it sleeps and why; the last one acquired", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: { mode: "poll" } });
    const steps = traced(waiter);
    await holder.lock("traced").acquire({ leaseMs: 600 });
    const startedAt = Date.now();
    const held = await waiter.lock("traced").acquire({ leaseMs: 5_000, waitMs: 5_000 });
    const waitedMs = Date.now() - startedAt;
    await held.release();

    expect(steps.length).toBeGreaterThanOrEqual(2);
    expect(steps.map((step) => step.attempt)).toEqual(steps.map((_, index) => index + 1));
    expect(steps.every((step) => step.name === "traced")).toBe(true);
    const last = steps.at(-1)!;
    expect(last).toMatchObject({ answer: "acquired", delayMs: 0, why: null });
    const busy = steps.slice(0, -1);
    expect(busy.every((step) => step.answer === "busy" && step.delayMs >= 1)).toBe(true);
    const reasons = new Set<WaitWhy | null>(busy.map((step) => step.why));
    for (const why of reasons) expect(["turn", "leaseEnd", "backoff"]).toContain(why);
    // The sleeps account for the wait: what is left is the requests' round trips.
    const slept = busy.reduce((sum, step) => sum + step.delayMs, 0);
    expect(slept).toBeLessThanOrEqual(waitedMs);
    expect(slept).toBeGreaterThan(waitedMs / 2);
  });

  it("push over a subscription: the waiter parks (why: park) and is handed the lock", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({
      prefix,
      scriptKeyLocking: true,
      wait: { mode: "push", wakeBy: "subscription" },
    });
    const steps = traced(waiter);
    const held = await holder.lock("parked").acquire({ leaseMs: 30_000 });
    const waiting = waiter.lock("parked").acquire({ leaseMs: 5_000, waitMs: 10_000 });
    await sleepMs(500);
    await held.release();
    await (await waiting).release();
    expect(steps.some((step) => step.why === "park")).toBe(true);
    expect(steps.at(-1)).toMatchObject({ answer: "acquired" });
  });

  it("a semaphore sleeps until its permits are expected back (why: permits)", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: { mode: "poll" } });
    const steps = traced(waiter);
    const semaphore = holder.semaphore("slots", { initialPermits: 1 });
    await semaphore.acquire({ leaseMs: 500 });
    const permit = await waiter
      .semaphore("slots", { initialPermits: 1 })
      .acquire({ leaseMs: 5_000, waitMs: 5_000 });
    await permit.release();
    expect(steps.some((step) => step.why === "permits")).toBe(true);
    expect(steps.at(-1)).toMatchObject({ answer: "acquired" });
  });

  it("a failure ridden out is a step of its own (answer: failed, why: outage)", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({
      prefix,
      redis: new Redis({
        url: bed.server.url,
        token: bed.server.token,
        enableTelemetry: false,
        retry: { retries: 0 },
      }),
      retries: 0,
      wait: { mode: "poll" },
    });
    const steps = traced(waiter);
    const held = await holder.lock("outage").acquire({ leaseMs: 10_000 });
    const waiting = waiter.lock("outage").acquire({ leaseMs: 5_000, waitMs: 10_000 });
    await sleepMs(100);
    bed.server.faults.configure({ failBeforeExecute: 1, commands: SCRIPTS });
    await sleepMs(600);
    bed.server.faults.disable();
    await held.release();
    await (await waiting).release();
    const failed = steps.filter((step) => step.answer === "failed");
    expect(failed.length).toBeGreaterThanOrEqual(1);
    expect(failed.every((step) => step.why === "outage" && step.holderTtlMs === null)).toBe(true);
  });

  it("a wait that runs out ends with a step that says so (why: deadline)", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: { mode: "poll" } });
    const steps = traced(waiter);
    await holder.lock("deadline").acquire({ leaseMs: 10_000 });
    expect(await waiter.lock("deadline").tryAcquire({ leaseMs: 5_000, waitMs: 300 })).toBeNull();
    expect(steps.at(-1)).toMatchObject({ answer: "busy", delayMs: 0, why: "deadline" });
  });
});

import { describe, expect, it } from "vitest";
import { createPrng, FaultController } from "../../../dev/rest/faults.js";

function run(controller: FaultController, requests: number) {
  return Array.from({ length: requests }, () => controller.decide("pipeline", ["set"]));
}

describe("fault injection decisions", () => {
  it("replays the same sequence for the same seed", () => {
    const options = { failBeforeExecute: 0.3, dropAfterExecute: 0.3, latencyMs: 10, jitterMs: 5 };
    const first = run(new FaultController({ ...options, seed: 42 }), 200);
    const second = run(new FaultController({ ...options, seed: 42 }), 200);
    const other = run(new FaultController({ ...options, seed: 43 }), 200);
    expect(second).toEqual(first);
    expect(other).not.toEqual(first);
  });

  it("restarts the sequence when the seed is set again", () => {
    const controller = new FaultController({ failBeforeExecute: 0.5, seed: 9 });
    const first = run(controller, 50);
    controller.configure({ seed: 9 });
    expect(run(controller, 50)).toEqual(first);
  });

  it("injects at roughly the configured rates, and counts what it injected", () => {
    const controller = new FaultController({
      failBeforeExecute: 0.2,
      dropAfterExecute: 0.25,
      seed: 1,
    });
    const decisions = run(controller, 10_000);
    const failed = decisions.filter((d) => d.failBeforeExecute).length;
    const dropped = decisions.filter((d) => d.dropAfterExecute).length;
    expect(failed / 10_000).toBeCloseTo(0.2, 1);
    // Drops only happen to requests that were not failed: 0.8 × 0.25.
    expect(dropped / 10_000).toBeCloseTo(0.2, 1);
    expect(decisions.some((d) => d.failBeforeExecute && d.dropAfterExecute)).toBe(false);
    expect(controller.counts()).toMatchObject({
      failBeforeExecute: failed,
      dropAfterExecute: dropped,
    });
  });

  it("keeps latency within base ± jitter", () => {
    const controller = new FaultController({ latencyMs: 50, jitterMs: 20, seed: 3 });
    const delays = run(controller, 1000).map((d) => d.delayMs);
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(30);
    expect(Math.max(...delays)).toBeLessThanOrEqual(70);
    expect(new Set(delays).size).toBeGreaterThan(100);
  });

  it("only touches requests that match the route and command filters", () => {
    const controller = new FaultController({
      failBeforeExecute: 1,
      routes: ["pipeline"],
      commands: ["EVALSHA"],
      seed: 5,
    });
    expect(controller.decide("pipeline", ["get"]).failBeforeExecute).toBe(false);
    expect(controller.decide("command", ["evalsha"]).failBeforeExecute).toBe(false);
    expect(controller.decide("pipeline", ["get", "evalsha"]).failBeforeExecute).toBe(true);
  });

  it("stops after maxFaults and can be switched off at runtime", () => {
    const controller = new FaultController({ dropAfterExecute: 1, maxFaults: 2, seed: 1 });
    expect(run(controller, 5).map((d) => d.dropAfterExecute)).toEqual([
      true,
      true,
      false,
      false,
      false,
    ]);
    controller.configure({ maxFaults: Number.POSITIVE_INFINITY });
    expect(controller.decide("command", ["get"]).dropAfterExecute).toBe(true);
    controller.disable();
    expect(controller.active).toBe(false);
    expect(controller.decide("command", ["get"]).dropAfterExecute).toBe(false);
    controller.resetCounts();
    expect(controller.counts()).toEqual({ failBeforeExecute: 0, dropAfterExecute: 0, delayed: 0 });
  });

  it("validates rates", () => {
    expect(() => new FaultController({ dropAfterExecute: 1.5 })).toThrow(RangeError);
    expect(() => new FaultController({ latencyMs: -1 })).toThrow(RangeError);
    expect(() => new FaultController({ seed: 1.5 })).toThrow(RangeError);
  });

  it("has a PRNG with values in [0, 1)", () => {
    const random = createPrng(123);
    const values = Array.from({ length: 10_000 }, random);
    expect(values.every((v) => v >= 0 && v < 1)).toBe(true);
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    expect(mean).toBeCloseTo(0.5, 1);
  });
});

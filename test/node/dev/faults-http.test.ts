/** Fault injection as @upstash/redis experiences it. */
import { errors } from "@upstash/redis";
import { afterEach, describe, expect, it } from "vitest";
import { backendKindsUnderTest, withDevServer } from "../../support/backends.js";
import { rawRequest, uniqueKey, upstash } from "../../support/rest.js";

describe.each(backendKindsUnderTest())("fault injection on %s", (kind) => {
  const server = withDevServer(kind);

  afterEach(() => {
    server().faults.disable();
    server().faults.resetCounts();
  });

  it("dropAfterExecute: the command runs, the response is lost, the client retries and gets the retry's answer", async () => {
    const { faults, stats } = server();
    const redis = upstash(server());
    const key = uniqueKey();
    // Lose exactly one response, then behave.
    faults.configure({ dropAfterExecute: 1, maxFaults: 1, commands: ["set"] });
    stats.reset();

    const result = await redis.set(key, "mine", { nx: true });
    // The first SET NX succeeded server-side; the client only saw the retry, which found the key.
    expect(result).toBeNull();
    expect(await redis.get(key)).toBe("mine");
    expect(faults.counts().dropAfterExecute).toBe(1);
    const snapshot = stats.snapshot();
    expect(snapshot.commandsByName.set).toBe(2);
    expect(snapshot.requestsByRoute.pipeline).toBe(3); // two SET attempts and the GET
  });

  it("dropAfterExecute without retries surfaces as a fetch failure", async () => {
    const { faults } = server();
    const redis = upstash(server(), { retry: { retries: 0 } });
    const key = uniqueKey();
    faults.configure({ dropAfterExecute: 1, commands: ["incr"] });
    await expect(redis.incr(key)).rejects.toThrow(/fetch failed|socket|terminated|closed/i);
    faults.disable();
    expect(await redis.get(key)).toBe(1);
  });

  it("failBeforeExecute: the client gets an error and nothing is applied", async () => {
    const { faults, stats } = server();
    const redis = upstash(server());
    const key = uniqueKey();
    faults.configure({ failBeforeExecute: 1, commands: ["set"] });
    stats.reset();
    const failure = await redis.set(key, "v").catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(errors.UpstashError);
    expect(String(failure)).toMatch(/injected fault/);
    expect(stats.snapshot().commands).toBe(0);
    expect(stats.snapshot().responsesByStatus[503]).toBe(1);
    faults.disable();
    expect(await redis.get(key)).toBeNull();
    expect(faults.counts().failBeforeExecute).toBe(1);
  });

  it("adds latency (and jitter) before responding", async () => {
    const { faults } = server();
    const redis = upstash(server());
    await redis.ping();
    faults.configure({ latencyMs: 120 });
    let started = performance.now();
    await redis.ping();
    expect(performance.now() - started).toBeGreaterThanOrEqual(110);
    faults.configure({ latencyMs: 100, jitterMs: 50, seed: 11 });
    const durations: number[] = [];
    for (let i = 0; i < 5; i++) {
      started = performance.now();
      await redis.ping();
      durations.push(performance.now() - started);
    }
    expect(Math.min(...durations)).toBeGreaterThanOrEqual(45);
    expect(Math.max(...durations)).toBeLessThan(400);
    expect(faults.counts().delayed).toBe(6);
  });

  it("only faults the filtered commands", async () => {
    const { faults } = server();
    const redis = upstash(server());
    faults.configure({ failBeforeExecute: 1, commands: ["evalsha", "eval"] });
    expect(await redis.ping()).toBe("PONG");
    await expect(redis.eval("return 1", [], [])).rejects.toThrow(/injected fault/);
  });

  it("replays the same fault sequence for the same seed", async () => {
    const { faults } = server();
    const pattern = async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) {
        statuses.push((await rawRequest(server(), "/", { body: ["ping"] })).status);
      }
      return statuses;
    };
    faults.configure({ failBeforeExecute: 0.5, seed: 2024 });
    const first = await pattern();
    faults.configure({ seed: 2024 });
    const second = await pattern();
    expect(second).toEqual(first);
    expect(first).toContain(503);
    expect(first).toContain(200);
  });
});

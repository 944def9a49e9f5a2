/**
 * The hold statistics that pace queued waiters (src/hold/pace.ts), folded in Redis itself: the
 * same Lua fragments the scripts use, fed known samples. Holds that vary by a few ms must show a
 * deviation of a few ms, or waiters aim at the release with no margin.
 */
import { describe, expect, it } from "vitest";
import { learnAverage, learnHold, readPace, writePace } from "../../../src/hold/pace.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, useTestBed } from "./testbed.js";

/**
 * Folds every ARGV sample into the hold average and deviation of KEYS[1] as a release does (a
 * hold that began at 0 and ends at the sample); answers both ×100, rounded.
 */
const FOLD_SAMPLES = `local paceTtlMs = 60000
for i = 1, #ARGV do
  redis.call('HSET', KEYS[1], 'at', 0)
  local now = tonumber(ARGV[i])
  ${readPace("KEYS[1]")}
  ${learnHold()}
  ${writePace("KEYS[1]")}
end
local stats = redis.call('HMGET', KEYS[1], 'hold', 'dev')
return {math.floor(tonumber(stats[1]) * 100 + 0.5), math.floor(tonumber(stats[2]) * 100 + 0.5)}`;

/**
 * Writes one field of the pace hash KEYS[1] as a script does, at server time ARGV[1] with a TTL of
 * ARGV[2] ms; answers the hash's PTTL after (ARGV[3] '1': the TTL is first cut to 1 s, as if time
 * had passed since it was set).
 */
const WRITE_AT = `local now, paceTtlMs = tonumber(ARGV[1]), ARGV[2]
if ARGV[3] == '1' then redis.call('PEXPIRE', KEYS[1], 1000) end
${readPace("KEYS[1]")}
paceWrite('hold', 25)
${writePace("KEYS[1]")}
return redis.call('PTTL', KEYS[1])`;

/** learnAverage at server time ARGV[1], TTL ARGV[2]; as WRITE_AT, ARGV[3] '1' cuts the TTL first. */
const LEARN_AT = `local now, paceTtlMs = tonumber(ARGV[1]), ARGV[2]
if ARGV[3] == '1' then redis.call('PEXPIRE', KEYS[1], 1000) end
${learnAverage("KEYS[1]", "hold", "25")}
return redis.call('PTTL', KEYS[1])`;

const FOLD_AVERAGE = `local now, paceTtlMs = 0, 3600000
for i = 1, #ARGV do
  local sample = tonumber(ARGV[i])
  ${learnAverage("KEYS[1]", "avg", "sample")}
end
return math.floor(tonumber(redis.call('HGET', KEYS[1], 'avg')) * 100 + 0.5)`;

describe.each(backendKindsUnderTest())("hold statistics on %s", (kind) => {
  const bed = useTestBed(kind);

  async function fold(script: string, samples: readonly number[]): Promise<unknown> {
    return bed.redis().eval(script, [`${freshPrefix()}:holds`], samples.map(String));
  }

  it("holds of 22 and 28 ms in turn average 25 ms with a deviation of 3 ms", async () => {
    const samples = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 22 : 28));
    const [average, deviation] = (await fold(FOLD_SAMPLES, samples)) as [number, number];
    // Rounding every step to whole ms held these at 22–23 ms and 1–2 ms.
    expect(average / 100).toBeGreaterThan(24);
    expect(average / 100).toBeLessThan(26);
    expect(deviation / 100).toBeGreaterThan(2.5);
    expect(deviation / 100).toBeLessThan(3.5);
  });

  it("a steady hold keeps its exact average and no deviation", async () => {
    const [average, deviation] = (await fold(FOLD_SAMPLES, Array(12).fill(25))) as [number, number];
    expect(average).toBe(2500);
    expect(deviation).toBe(0);
  });

  it("an average without deviation follows samples a little above it", async () => {
    // 30 samples of 27 after one of 25: each step closes a quarter of a 2 ms gap, which whole-ms
    // steps rounded away entirely (the average stayed at 25).
    const average = (await fold(FOLD_AVERAGE, [25, ...Array(30).fill(27)])) as number;
    expect(average / 100).toBeGreaterThan(26.9);
  });

  it("one unusually long hold counts as at most twice the average", async () => {
    const [average] = (await fold(FOLD_SAMPLES, [20, 10_000])) as [number, number];
    expect(average).toBe(2500); // 20 + (40 − 20) / 4
  });

  it("sets the TTL at the first write, and again only once half of it has passed", async () => {
    const key = `${freshPrefix()}:holds`;
    const write = async (now: number, cut: boolean) =>
      Number(await bed.redis().eval(WRITE_AT, [key], [String(now), "600000", cut ? "1" : "0"]));
    expect(await write(1_000, false)).toBeGreaterThan(590_000);
    // Within half the TTL of the last time it was set: left as it is (one PEXPIRE fewer).
    expect(await write(300_000, true)).toBeLessThanOrEqual(1_000);
    // Past half of it: set again.
    expect(await write(301_001, true)).toBeGreaterThan(590_000);
    // A hash made anew (the old one expired) has no record of it: set at its first write.
    await bed.redis().del(key);
    expect(await write(301_002, false)).toBeGreaterThan(590_000);
  });

  it("a learnt average (the semaphore's hold) sets the TTL the same way", async () => {
    const key = `${freshPrefix()}:pace`;
    const learn = async (now: number, cut: boolean) =>
      Number(await bed.redis().eval(LEARN_AT, [key], [String(now), "600000", cut ? "1" : "0"]));
    expect(await learn(1_000, false)).toBeGreaterThan(590_000);
    expect(await learn(300_000, true)).toBeLessThanOrEqual(1_000);
    expect(await learn(301_001, true)).toBeGreaterThan(590_000);
    expect(Number(await bed.redis().hget(key, "hold"))).toBe(25);
  });
});

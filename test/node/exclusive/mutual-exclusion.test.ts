import { describe, expect, it } from "vitest";
import { LockClient } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "./testbed.js";

interface Section {
  start: number;
  end: number;
  token: number;
}

describe.each(backendKindsUnderTest())("mutual exclusion on %s", (kind) => {
  const bed = useTestBed(kind);

  it("serialises a racy read-modify-write across many contenders and clients", async () => {
    const prefix = freshPrefix();
    const counterKey = `${prefix}:counter`;
    const contenders = 12;
    const rounds = 5;
    const sections: Section[] = [];
    let inside = 0;
    let overlaps = 0;

    async function contender(): Promise<void> {
      // A client of its own: as if every contender ran in another isolate.
      const redis = bed.redis();
      const client = new LockClient({
        redis,
        prefix,
        wait: { initialDelayMs: 5, maxPolls: 10_000 },
      });
      for (let round = 0; round < rounds; round++) {
        await client.withLock(
          "counter",
          async (held) => {
            inside += 1;
            if (inside > 1) overlaps += 1;
            const start = Date.now();
            const value = Number((await redis.get<number>(counterKey)) ?? 0);
            await sleepMs(Math.random() * 4);
            await redis.set(counterKey, value + 1);
            sections.push({ start, end: Date.now(), token: held.fencingToken });
            inside -= 1;
          },
          { leaseMs: 10_000, waitMs: 60_000 },
        );
      }
    }

    await Promise.all(Array.from({ length: contenders }, contender));
    expect(overlaps).toBe(0);
    expect(Number(await bed.redis().get(counterKey))).toBe(contenders * rounds);
    // Fencing tokens grow strictly in the order the sections ran.
    const byStart = [...sections].sort((a, b) => a.start - b.start);
    for (let i = 1; i < byStart.length; i++) {
      expect(byStart[i]!.token).toBeGreaterThan(byStart[i - 1]!.token);
      expect(byStart[i]!.start).toBeGreaterThanOrEqual(byStart[i - 1]!.end);
    }
  });
});

/**
 * What every exclusive kind (lock, fair lock, write lock) promises, tested once over all of them:
 * exactly-once under responses lost after execution (@upstash/redis and edgelock re-send), so
 * hold counts never drift and a release never applies twice.
 */
import { describe, expect, it } from "vitest";
import type { LockClient, SingleNameLock } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { useTestBed } from "./testbed.js";

interface ExclusiveKind {
  readonly kind: string;
  make(client: LockClient, name: string): SingleNameLock;
  /** Fault seed, rounds and the least number of dropped responses the run must see. */
  readonly seed: number;
  readonly rounds: number;
  readonly minDrops: number;
}

const KINDS: readonly ExclusiveKind[] = [
  { kind: "lock", make: (c, n) => c.lock(n), seed: 7, rounds: 25, minDrops: 10 },
  { kind: "fair lock", make: (c, n) => c.fairLock(n), seed: 11, rounds: 12, minDrops: 5 },
  {
    kind: "write lock",
    make: (c, n) => c.readWriteLock(n).writeLock(),
    seed: 13,
    rounds: 12,
    minDrops: 5,
  },
];

const CASES = KINDS.flatMap((kind) =>
  backendKindsUnderTest().map((backend) => [kind.kind, backend, kind] as const),
);

describe.each(CASES)("%s exactly-once under lost responses on %s", (_, backend, kind) => {
  // Every third response is lost after the command ran; @upstash/redis re-sends the request.
  const bed = useTestBed(backend, { faults: { dropAfterExecute: 0.3, seed: kind.seed } });

  it("never lets hold counts drift, nor applies a release twice", async () => {
    const client = bed.client({ retries: 5 });
    const lock = kind.make(client, "lossy");
    for (let round = 0; round < kind.rounds; round++) {
      const outer = await lock.acquire({ leaseMs: 30_000 });
      const inner = await lock.acquire({ leaseMs: 30_000, owner: outer.owner });
      expect(inner.fencingToken).toBe(outer.fencingToken);
      expect(await lock.holdCount(outer.owner)).toBe(2);
      await inner.release();
      expect(await lock.holdCount(outer.owner)).toBe(1);
      await outer.release();
      expect(await lock.isLocked()).toBe(false);
    }
    expect(bed.server.faults.counts().dropAfterExecute).toBeGreaterThan(kind.minDrops);
  });
});

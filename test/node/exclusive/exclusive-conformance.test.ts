/**
 * What every exclusive kind (lock, fair lock, write lock) promises, tested once over all of them:
 * exactly-once under responses lost after execution (@upstash/redis and edgelock re-send), so
 * hold counts never drift and a release never applies twice; and an attempt that reaches Redis
 * late (a request the client gave up on) takes nothing once its acquisition went on; and a
 * handle whose hold ended never extends or releases a later hold of the same owner.
 */
import { describe, expect, it } from "vitest";
import { LockClient, LockNotHeldError } from "../../../src/index.js";
import type { SingleNameLock } from "../../../src/locks/single-name-lock.js";
import { backendKindsUnderTest, LOSSY_BACKEND_TIMEOUT_MS } from "../../support/backends.js";
import { recordingRedis } from "../../support/recording-redis.js";
import { freshPrefix, until, useTestBed } from "./testbed.js";

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
    const client = bed.client({ retries: 5, backendTimeoutMs: LOSSY_BACKEND_TIMEOUT_MS });
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

describe.each(CASES)(
  "%s: an attempt delivered again late takes nothing, on %s",
  (_, backend, kind) => {
    const bed = useTestBed(backend);

    // Issue 13 case 5: every attempt of one acquisition shares its operation id, so a busy
    // attempt's copy that reaches Redis after the acquisition succeeded and was released finds
    // that record and replays it ({-1}: the hold is gone) instead of taking a hold nobody knows of.
    it("leaves the owner holding nothing after its release", async () => {
      const prefix = freshPrefix();
      const recording = recordingRedis(bed.redis());
      const waiter = kind.make(new LockClient({ redis: recording.client, prefix }), "late");
      const other = kind.make(new LockClient({ redis: bed.redis(), prefix }), "late");
      const holder = await other.acquire({ leaseMs: 30_000 });
      setTimeout(() => void holder.release(), 150);
      const before = recording.calls.length;
      const held = await waiter.acquire({ leaseMs: 30_000, waitMs: 5_000 });
      const attempts = recording.calls.slice(before);
      expect(attempts.length).toBeGreaterThan(1); // at least one busy attempt came first
      await held.release();
      expect(await waiter.holdCount(held.owner)).toBe(0);

      await attempts[0]!(); // the first, busy, attempt reaches Redis again only now
      expect(await waiter.holdCount(held.owner)).toBe(0);
      expect(await waiter.isLocked()).toBe(false);
    });
  },
);

describe.each(CASES)(
  "%s: a handle whose hold ended leaves a later hold of the same owner alone, on %s",
  (_, backend, kind) => {
    const bed = useTestBed(backend);

    it("its release and extend fail with LockNotHeldError and the later hold stands", async () => {
      const client = bed.client({ prefix: freshPrefix() });
      const lock = kind.make(client, "generations");
      const owner = LockClient.newOwner();
      const ended = await lock.acquire({ leaseMs: 100, owner });
      await until(async () => !(await lock.isLocked()));
      // The same owner (one owner per request, say, through client.scope()) takes it again.
      const later = await lock.acquire({ leaseMs: 30_000, owner });
      expect(later.fencingToken).toBeGreaterThan(ended.fencingToken);
      await expect(ended.extend(60_000)).rejects.toBeInstanceOf(LockNotHeldError);
      await expect(ended.release()).rejects.toBeInstanceOf(LockNotHeldError);
      expect(await lock.holdCount(owner)).toBe(1);
      expect(await lock.remainingTtlMs()).toBeLessThanOrEqual(30_000);
      await later.release();
      expect(await lock.isLocked()).toBe(false);
    });
  },
);

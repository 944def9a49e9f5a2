/**
 * Requests per operation, tested once over every exclusive kind (lock, fair lock, write lock,
 * multi-lock on one database): uncontended, each operation is one script call, so one request;
 * after SCRIPT FLUSH the first call of each script costs two (EVALSHA → NOSCRIPT, then EVAL).
 */
import type { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import type { AcquireOptions, HeldLock, LockClient } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { useTestBed } from "./testbed.js";

interface Acquirable {
  acquire(options?: AcquireOptions): Promise<HeldLock>;
}

interface ExclusiveKind {
  readonly kind: string;
  make(client: LockClient, name: string): Acquirable;
}

const KINDS: readonly ExclusiveKind[] = [
  { kind: "lock", make: (c, n) => c.lock(n) },
  { kind: "fair lock", make: (c, n) => c.fairLock(n) },
  { kind: "write lock", make: (c, n) => c.readWriteLock(n).writeLock() },
  {
    kind: "multi-lock on one database",
    make: (c, n) => c.multiLock([c.lock(`${n}:a`), c.lock(`${n}:b`)]),
  },
];

const CASES = KINDS.flatMap((kind) =>
  backendKindsUnderTest().map((backend) => [kind.kind, backend, kind] as const),
);

describe.each(CASES)("%s: requests per operation on %s", (_, backend, kind) => {
  const bed = useTestBed(backend);

  /** Requests the server received while `operation` ran. */
  async function cost<T>(operation: () => Promise<T>): Promise<[T, number]> {
    const before = bed.requests();
    const result = await operation();
    return [result, bed.requests() - before];
  }

  it("costs one request to acquire, re-enter, extend and release when uncontended", async () => {
    const lock = kind.make(bed.client(), "counted");
    // The first call on a fresh Redis client sends EVAL, later ones EVALSHA: one request either way.
    for (let round = 0; round < 3; round++) {
      const [held, acquire] = await cost(() => lock.acquire({ leaseMs: 5_000 }));
      expect(acquire).toBe(1);
      const [inner, reenter] = await cost(() =>
        lock.acquire({ leaseMs: 5_000, owner: held.owner }),
      );
      expect(reenter).toBe(1);
      expect((await cost(() => held.extend(6_000)))[1]).toBe(1);
      expect((await cost(() => inner.release()))[1]).toBe(1);
      expect((await cost(() => held.release()))[1]).toBe(1);
    }
  });

  it("costs two requests once per script after SCRIPT FLUSH, then one again", async () => {
    const redis: Redis = bed.redis();
    const lock = kind.make(bed.client({ redis }), "flushed");
    const warm = await lock.acquire({ leaseMs: 5_000 }); // EVAL: caches the scripts
    await (await lock.acquire({ leaseMs: 5_000, owner: warm.owner })).release();
    await warm.extend(6_000);
    await warm.release();
    await redis.scriptFlush();
    const [held, acquire] = await cost(() => lock.acquire({ leaseMs: 5_000 }));
    expect(acquire).toBe(2); // EVALSHA → NOSCRIPT, then EVAL
    const [inner, reenter] = await cost(() => lock.acquire({ leaseMs: 5_000, owner: held.owner }));
    expect(reenter).toBe(1); // the acquire script is cached again
    expect((await cost(() => held.extend(6_000)))[1]).toBe(2);
    expect((await cost(() => inner.release()))[1]).toBe(2);
    expect((await cost(() => held.release()))[1]).toBe(1);
    const [again, reacquire] = await cost(() => lock.acquire({ leaseMs: 5_000 }));
    expect(reacquire).toBe(1);
    await again.release();
  });
});

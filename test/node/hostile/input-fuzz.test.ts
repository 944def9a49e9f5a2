/**
 * Fuzzing the public API with hostile input: every call is refused with LockInputError exactly
 * when the documented rules say the input is bad, before any request is sent (counted on a
 * recording RedisLike here, and on the real server's request counter below), and nothing is stored.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type AcquireOptions,
  LockClient,
  type LockClientOptions,
  LockHandle,
  LockInputError,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, useTestBed } from "../exclusive/testbed.js";
import {
  acquireOptionsCase,
  type Case,
  clientOptionsCase,
  durationCase,
  invalidSample,
  nameCase,
  ownerCase,
} from "./arbitraries.js";
import { fakeRedis } from "./fake-redis.js";

const outcomeOf = (promise: Promise<unknown>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

/** `{ owner }` for lock.release(), or something that is not that. */
const releaseOptionsCase: fc.Arbitrary<Case> = fc.oneof(
  ownerCase.map((owner) => ({ value: { owner: owner.value }, valid: owner.valid })),
  ownerCase.map((owner) => ({ value: { owner: owner.value, force: true }, valid: false })),
  fc
    .constantFrom<unknown>(undefined, null, "owner", 1, [])
    .map((value) => ({ value, valid: false })),
);

describe("hostile input is refused before any request", () => {
  it("lock names: accepted exactly when 1–1024 UTF-8 bytes, no braces, well-formed", () => {
    fc.assert(
      fc.property(nameCase, (name) => {
        const redis = fakeRedis();
        const client = new LockClient({ redis });
        if (name.valid) {
          expect(client.lock(name.value as string).name).toBe(name.value);
        } else {
          expect(() => client.lock(name.value as string)).toThrow(LockInputError);
        }
        expect(redis.calls).toBe(0);
      }),
      { numRuns: 600 },
    );
  });

  it("acquire and tryAcquire options: durations, owners, signals, wait policies, typos", async () => {
    await fc.assert(
      fc.asyncProperty(acquireOptionsCase, fc.boolean(), async (options, tryOnly) => {
        const redis = fakeRedis();
        const lock = new LockClient({ redis }).lock("fuzzed");
        const given = options.value as AcquireOptions;
        const outcome = await outcomeOf(tryOnly ? lock.tryAcquire(given) : lock.acquire(given));
        if (options.valid) {
          expect(outcome).toMatchObject({ value: expect.any(LockHandle) });
          await (outcome as { value: LockHandle }).value.release();
        } else {
          expect(outcome).toMatchObject({ error: expect.any(LockInputError) });
          expect(redis.calls).toBe(0);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("extend(ms): negative, NaN, Infinity, huge, fractional and non-numbers are refused", async () => {
    const redis = fakeRedis();
    const handle = await new LockClient({ redis }).lock("extended").acquire({ leaseMs: 5_000 });
    await fc.assert(
      fc.asyncProperty(durationCase(100), async (ms) => {
        const before = redis.calls;
        const outcome = await outcomeOf(handle.extend(ms.value as number));
        if (ms.valid) {
          expect(outcome).toEqual({ value: undefined });
          expect(redis.calls).toBe(before + 1);
        } else {
          expect(outcome).toMatchObject({ error: expect.any(LockInputError) });
          expect(redis.calls).toBe(before);
        }
      }),
      { numRuns: 300 },
    );
    await handle.release();
  });

  it("LockClient options: refused synchronously when any is of the wrong type or range", () => {
    fc.assert(
      fc.property(clientOptionsCase, (options) => {
        const redis = fakeRedis();
        const given = options.value;
        const build = () =>
          given === undefined ||
          (typeof given === "object" && given !== null && !Array.isArray(given))
            ? new LockClient({ redis, ...(given ?? {}) } as LockClientOptions)
            : new LockClient(given as LockClientOptions);
        if (options.valid) expect(build()).toBeInstanceOf(LockClient);
        else expect(build).toThrow(LockInputError);
        expect(redis.calls).toBe(0);
      }),
      // `watchdog: null` once fell back to the default silently.
      { numRuns: 500, examples: [[{ value: { watchdog: null }, valid: false }]] },
    );
  });

  it("the redis option must be able to run scripts", () => {
    for (const redis of [undefined, null, {}, "redis://localhost", { eval: 1, evalsha: 1 }]) {
      expect(() => new LockClient({ redis } as unknown as LockClientOptions)).toThrow(
        LockInputError,
      );
    }
  });

  it("owners of holdCount, isHeldBy, release and scope", async () => {
    await fc.assert(
      fc.asyncProperty(ownerCase, releaseOptionsCase, async (owner, release) => {
        const redis = fakeRedis();
        const client = new LockClient({ redis });
        const lock = client.lock("owned");
        const counted = await outcomeOf(lock.holdCount(owner.value as string));
        const asked = await outcomeOf(lock.isHeldBy(owner.value as string));
        const released = await outcomeOf(lock.release(release.value as { owner: string }));
        const scoped = await outcomeOf(
          Promise.resolve().then(() => client.scope(() => 1, owner.value as string)),
        );
        for (const outcome of [counted, asked, scoped]) {
          if (owner.valid) expect(outcome).not.toHaveProperty("error");
          else expect(outcome).toMatchObject({ error: expect.any(LockInputError) });
        }
        if (release.valid) expect(released).not.toHaveProperty("error");
        else expect(released).toMatchObject({ error: expect.any(LockInputError) });
        const requests = (owner.valid ? 2 : 0) + (release.valid ? 1 : 0);
        expect(redis.calls).toBe(requests);
      }),
      { numRuns: 300 },
    );
  });

  it("withLock refuses a bad name, options bag or callback before acquiring", async () => {
    const redis = fakeRedis();
    const client = new LockClient({ redis });
    let ran = false;
    const run = async () => {
      ran = true;
    };
    for (const name of invalidSample(nameCase, 30, 1)) {
      await expect(client.withLock(name as string, run)).rejects.toBeInstanceOf(LockInputError);
    }
    for (const options of invalidSample(acquireOptionsCase, 30, 2)) {
      await expect(client.withLock("ok", run, options as AcquireOptions)).rejects.toBeInstanceOf(
        LockInputError,
      );
    }
    for (const fn of [undefined, null, 42, "run", {}]) {
      await expect(
        client.withLock("ok", fn as unknown as () => Promise<void>),
      ).rejects.toBeInstanceOf(LockInputError);
    }
    expect(ran).toBe(false);
    expect(redis.calls).toBe(0);
  });
});

describe.each(backendKindsUnderTest())("hostile input stores nothing on %s", (kind) => {
  const bed = useTestBed(kind);

  it("sends no request and leaves no key for any refused call", async () => {
    const prefix = freshPrefix();
    const client = bed.client({ prefix });
    const held = await client.lock("held").acquire({ leaseMs: 10_000 });
    const before = bed.requests();
    const refused: unknown[] = [];
    const attempt = async (call: () => unknown) => {
      try {
        await call();
        refused.push("accepted!");
      } catch (error) {
        refused.push(error);
      }
    };
    for (const name of invalidSample(nameCase, 60, 3)) {
      await attempt(() => client.lock(name as string).acquire({ leaseMs: 1_000 }));
    }
    for (const options of invalidSample(acquireOptionsCase, 60, 4)) {
      await attempt(() => client.lock("fuzzed").acquire(options as AcquireOptions));
      await attempt(() => client.lock("fuzzed").tryAcquire(options as AcquireOptions));
    }
    for (const ms of invalidSample(durationCase(100), 40, 5)) {
      await attempt(() => held.extend(ms as number));
    }
    for (const owner of invalidSample(ownerCase, 40, 6)) {
      await attempt(() => client.lock("held").release({ owner: owner as string }));
      await attempt(() => client.lock("held").holdCount(owner as string));
    }
    expect(refused.filter((outcome) => !(outcome instanceof LockInputError))).toEqual([]);
    expect(bed.requests()).toBe(before);
    await held.release();
    // Only the fence counter of the one real lock remains (and its operation records).
    const keys = await bed.redis().keys(`${prefix}*`);
    expect(keys.filter((key) => !key.startsWith(`${prefix}:{held}`))).toEqual([]);
  });
});

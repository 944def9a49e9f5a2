/**
 * Issue 14 item 5: an unreachable or hanging backend fails fast. One call to Redis has a time
 * budget (`backendTimeoutMs`, default 2000) over edgelock's re-sends and the Redis client's own
 * retries, so `acquire({ waitMs: 0 })` ends in LockBackendError within 3 s (it took ~13 s with
 * @upstash/redis's default retries), and an abandoned request stays exactly-once.
 */
import { Redis } from "@upstash/redis";
import { afterEach, describe, expect, it } from "vitest";
import {
  LockBackendError,
  LockClient,
  LockInputError,
  type RedisLike,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../exclusive/testbed.js";
import { closedPort, type HttpDouble, startHangingServer } from "./http-doubles.js";

/** The documented bound for acquire({ waitMs: 0 }), plus timer slack on a loaded machine. */
const BOUND_MS = 3_000;
const SLACK_MS = 500;

const doubles: HttpDouble[] = [];
afterEach(async () => {
  await Promise.all(doubles.splice(0).map((double) => double.close()));
});

/** How long `call` took to reject, and with what. */
async function timedFailure(call: () => Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const started = Date.now();
  const error = await call().then(
    () => null,
    (failure: unknown) => failure,
  );
  return { ms: Date.now() - started, error };
}

/** @upstash/redis on its defaults (5 retries with exponential backoff on fetch errors). */
const defaultRedis = (url: string) =>
  new Redis({ url, token: "t".repeat(40), enableTelemetry: false });

describe("an unreachable backend fails fast", () => {
  it("a closed port: LockBackendError within the bound, with @upstash/redis on its defaults", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const client = new LockClient({ redis: defaultRedis(url), prefix: "p" });
    const { ms, error } = await timedFailure(() =>
      client.lock("guarded").acquire({ waitMs: 0, leaseMs: 1_000 }),
    );
    expect(error).toBeInstanceOf(LockBackendError);
    expect(ms).toBeLessThan(BOUND_MS + SLACK_MS);
  });

  it("a closed port: acquire() without waitMs rides out outageMs, then fails", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const client = new LockClient({ redis: defaultRedis(url), prefix: "p" });
    const { ms, error } = await timedFailure(() => client.lock("guarded").acquire());
    expect(error).toBeInstanceOf(LockBackendError);
    // The documented bound: wait.outageMs (5000) + backendTimeoutMs (2000) for the poll under
    // way + one backoff (250). Leaving the queue is not awaited on a failing backend.
    expect(ms).toBeLessThan(7_250 + SLACK_MS);
  });

  // Issue 44 item 3: the error of a wait that rode out failures says how long it tried and which
  // option ended it (its last request's own words tell only of that request).
  it("a closed port: acquire()'s error names how long it retried and wait.outageMs", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const client = new LockClient({ redis: defaultRedis(url), prefix: "p" });
    const { ms, error } = await timedFailure(() => client.lock("guarded").acquire());
    expect(error).toBeInstanceOf(LockBackendError);
    const message = (error as LockBackendError).message;
    expect(message).toMatch(/connection refused by 127\.0\.0\.1:\d+/);
    expect(message).toContain("wait.outageMs (5000 ms)");
    expect(message).toContain("wait: { outageMs: 0 }");
    const retried = Number(/retried for (\d+) ms over (\d+) requests/.exec(message)?.[1]);
    expect(retried).toBeGreaterThanOrEqual(5_000);
    expect(retried).toBeLessThanOrEqual(ms);
    expect((error as LockBackendError).cause).toBeInstanceOf(LockBackendError);
  });

  it("a closed port: acquire({ wait: { outageMs: 0 } }) fails at the first failure, as its error advises", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const client = new LockClient({ redis: defaultRedis(url), prefix: "p" });
    const { ms, error } = await timedFailure(() =>
      client.lock("guarded").acquire({ wait: { outageMs: 0 } }),
    );
    expect(error).toBeInstanceOf(LockBackendError);
    expect((error as LockBackendError).message).not.toContain("retried for");
    expect(ms).toBeLessThan(BOUND_MS + SLACK_MS);
  });

  // A waited acquire ends within waitMs + one backendTimeoutMs; tryAcquire() within one call.
  it.each([200, 1_000, 5_000])(
    "a closed port: acquire({ waitMs: %i }) fails within waitMs + backendTimeoutMs",
    async (waitMs) => {
      const url = `http://127.0.0.1:${await closedPort()}`;
      const client = new LockClient({ redis: defaultRedis(url), prefix: "p" });
      const { ms, error } = await timedFailure(() => client.lock("guarded").acquire({ waitMs }));
      expect(error).toBeInstanceOf(LockBackendError);
      expect(ms).toBeLessThan(waitMs + 2_000 + SLACK_MS);
    },
  );

  it("a closed port: tryAcquire() fails within one backendTimeoutMs", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const client = new LockClient({ redis: defaultRedis(url), prefix: "p" });
    const { ms, error } = await timedFailure(() => client.lock("guarded").tryAcquire());
    expect(error).toBeInstanceOf(LockBackendError);
    expect(ms).toBeLessThan(2_000 + SLACK_MS);
  });

  it("a server that accepts and never answers: LockBackendError within the bound", async () => {
    const hanging = await startHangingServer();
    doubles.push(hanging);
    const client = new LockClient({ redis: defaultRedis(hanging.url), prefix: "p" });
    const { ms, error } = await timedFailure(() =>
      client.lock("guarded").acquire({ waitMs: 0, leaseMs: 1_000 }),
    );
    expect(error).toBeInstanceOf(LockBackendError);
    expect((error as Error).message).toMatch(/no answer within 2000 ms/);
    expect(ms).toBeLessThan(BOUND_MS + SLACK_MS);
    // The budget, not an instant failure: the request was given its time.
    expect(ms).toBeGreaterThanOrEqual(1_900);
  });

  it("backendTimeoutMs tunes the budget per client, and is validated", async () => {
    const hanging = await startHangingServer();
    doubles.push(hanging);
    const client = new LockClient({
      redis: defaultRedis(hanging.url),
      prefix: "p",
      backendTimeoutMs: 400,
    });
    const { ms, error } = await timedFailure(() => client.lock("guarded").tryAcquire());
    expect(error).toBeInstanceOf(LockBackendError);
    expect(ms).toBeGreaterThanOrEqual(380);
    expect(ms).toBeLessThan(400 + SLACK_MS * 2);
    const redis = defaultRedis(hanging.url);
    for (const bad of [99, 60_001, 1.5, Number.NaN, "2000", null, Number.POSITIVE_INFINITY]) {
      expect(() => new LockClient({ redis, backendTimeoutMs: bad as number })).toThrow(
        LockInputError,
      );
    }
  });
});

describe.each(backendKindsUnderTest())("an abandoned request stays exactly-once on %s", (kind) => {
  const bed = useTestBed(kind);

  /** The real Redis, except that the answers of the next `lose` script calls never arrive. */
  function withLostAnswers(): { redis: RedisLike; lose(count: number): void } {
    const real = bed.redis();
    let losing = 0;
    const maybeLost = async (reply: Promise<unknown>) => {
      const value = await reply;
      if (losing > 0) {
        losing -= 1;
        return new Promise<unknown>(() => {}); // ran on the server; the answer never comes
      }
      return value;
    };
    return {
      redis: {
        eval: (script, keys, args) => maybeLost(real.eval(script, keys, args)),
        evalsha: (sha, keys, args) => maybeLost(real.evalsha(sha, keys, args)),
      },
      lose: (count) => {
        losing = count;
      },
    };
  }

  it("an acquire that ran but timed out is replayed by the waiter's next poll: one hold", async () => {
    const { redis, lose } = withLostAnswers();
    const client = new LockClient({ redis, prefix: freshPrefix(), backendTimeoutMs: 300 });
    const lock = client.lock("replayed");
    lose(1);
    const held = await lock.acquire({ waitMs: 5_000, leaseMs: 10_000 });
    expect(await lock.holdCount(held.owner)).toBe(1);
    await held.release();
    expect(await lock.isLocked()).toBe(false);
  });

  it("an abandoned acquire that runs late leaves a hold that expires with its lease", async () => {
    const real = bed.redis();
    const late = (run: () => Promise<unknown>) => sleepMs(800).then(run);
    const slow: RedisLike = {
      eval: (script, keys, args) => late(() => real.eval(script, keys, args)),
      evalsha: (sha, keys, args) => late(() => real.evalsha(sha, keys, args)),
    };
    const prefix = freshPrefix();
    const client = new LockClient({ redis: slow, prefix, backendTimeoutMs: 300 });
    const { error } = await timedFailure(() =>
      client.lock("late").acquire({ waitMs: 0, leaseMs: 500 }),
    );
    expect(error).toBeInstanceOf(LockBackendError);
    const observer = new LockClient({ redis: real, prefix });
    await until(() => observer.lock("late").isLocked(), 3_000);
    await until(async () => !(await observer.lock("late").isLocked()), 500 + 1_000);
  });

  it("a single attempt whose answer never came is left: the hold it took is released long before its lease", async () => {
    const { redis, lose } = withLostAnswers();
    const prefix = freshPrefix();
    const client = new LockClient({ redis, prefix, backendTimeoutMs: 300 });
    lose(1); // the attempt runs and takes the lock; its caller never hears so
    const { error } = await timedFailure(() =>
      client.lock("lost").tryAcquire({ waitMs: 0, leaseMs: 30_000 }),
    );
    expect(error).toBeInstanceOf(LockBackendError);
    // Giving up, it left: the leave found the hold its attempt took and released it.
    const observer = new LockClient({ redis: bed.redis(), prefix });
    await until(async () => !(await observer.lock("lost").isLocked()), 3_000);
  });
});

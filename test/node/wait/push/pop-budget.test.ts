/**
 * On Workers a blocking pop holds one of the invocation's six connections for its park, as a
 * stream does: a request's waiters parked on pops count against the same budget as its streams
 * (MAX_STREAMS_ON_WORKERS), and the ones beyond it poll (docs/push.md, "`wait.mode: "auto"`").
 * Node runs the Workers path here (the client is made under Workers' user agent), on the local
 * server's `redis` profile, whose pops block; a wrapper counts the pops in flight.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { LockClient, RedisLike } from "../../../../src/index.js";
import { MAX_STREAMS_ON_WORKERS } from "../../../../src/wait/push/client-state.js";
import { backendKindsUnderTest } from "../../../support/backends.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("the Workers connection budget of pops on %s", (backend) => {
  const bed = useTestBed(backend, { profile: "redis" });
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  /** A Redis client counting its blocking pops in flight, and the most at once. */
  function countingPops() {
    const redis = bed.redis();
    const pops = { inFlight: 0, peak: 0, sent: 0 };
    const counting: RedisLike = {
      eval: (script, keys, args) => redis.eval(script, keys, args),
      evalsha: (sha, keys, args) => redis.evalsha(sha, keys, args),
      exec: async (command) => {
        if (String(command[0]).toUpperCase() !== "BLPOP") return redis.exec(command);
        pops.sent += 1;
        pops.inFlight += 1;
        pops.peak = Math.max(pops.peak, pops.inFlight);
        try {
          return await redis.exec(command);
        } finally {
          pops.inFlight -= 1;
        }
      },
    };
    return { redis: counting, pops };
  }

  /** A client on the defaults as a Worker has it. */
  function workersClient(prefix: string, redis: RedisLike): LockClient {
    vi.stubGlobal("navigator", { userAgent: "Cloudflare-Workers" });
    try {
      return bed.client({ prefix, redis });
    } finally {
      vi.unstubAllGlobals();
    }
  }

  it(`one request parks at most ${MAX_STREAMS_ON_WORKERS} waiters on pops at once; the rest poll, all served`, async () => {
    const prefix = freshPrefix();
    const { redis, pops } = countingPops();
    const client = workersClient(prefix, redis);
    const holder = bed.client({ prefix });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    // One request's handler: nine waits at once, each passing the lock on.
    const served = client.scope(() =>
      Promise.all(
        Array.from({ length: 9 }, async () =>
          (await client.lock("job").acquire({ leaseMs: 10_000, waitMs: 20_000 })).release(),
        ),
      ),
    );
    await until(() => pops.inFlight >= MAX_STREAMS_ON_WORKERS);
    // Time for any pop beyond the budget to be sent.
    await sleepMs(500);
    const parkedWhileHeld = pops.inFlight;
    await held.release();
    await served;
    expect(parkedWhileHeld).toBe(MAX_STREAMS_ON_WORKERS);
    expect(pops.peak).toBeLessThanOrEqual(MAX_STREAMS_ON_WORKERS);
    expect(await holder.lock("job").isLocked()).toBe(false);
  }, 30_000);
});

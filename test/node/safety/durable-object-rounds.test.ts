/**
 * One object renews many holds; a renewal that hangs must not hold back the others. The long
 * chaos run found it (`do`, seed 14 and the sixth run's one lapse: a hold first renewed 820 ms
 * into a 500 ms lease): an alarm waited for every renewal of its round before arming the next, so
 * a hold registered meanwhile waited for a hung renewal's call budget (2 s). The real LockWatchdog
 * in Node (SQLite storage, its alarm a timer), its default Redis client seen through a wrapper that
 * hangs the renewals of one lock, against the REST server.
 */
import { describe, expect, it } from "vitest";
import { durableObjectWatchdog } from "../../../src/durable-object/watchdog.js";
import { EXTEND } from "../../../src/locks/exclusive/extend.js";
import type { RedisLike } from "../../../src/transport/redis-like.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sentScript } from "../../support/sent-script.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../exclusive/testbed.js";
import { objectInNode } from "./durable-object-in-node.js";

/** The lease each renewal sets; the object renews every third of it. */
const LEASE_MS = 600;

describe.each(backendKindsUnderTest())("Durable Object watchdog rounds on %s", (backend) => {
  const bed = useTestBed(backend);

  it("a renewal that hangs holds back no other hold's renewal", async () => {
    const isExtend = sentScript(EXTEND);
    // The renewals of lock "stuck" after its first never come back (the object's call gives up
    // after its 2 s budget). The first is answered: the object's client has learnt what the
    // server makes of Upstash's key-locking flag (until then its scripts wait for the first).
    let stuckRenewals = 0;
    const hangs = async (script: string | null, sha: string | null, keys: string[]) =>
      (await isExtend)(script, sha) &&
      keys.some((key) => key.includes("{stuck}")) &&
      ++stuckRenewals > 1;
    const hanging = (redis: RedisLike): RedisLike => ({
      async eval(script, keys, args) {
        if (await hangs(script, null, keys)) return new Promise<never>(() => {});
        return redis.eval(script, keys, args);
      },
      async evalsha(sha, keys, args) {
        if (await hangs(null, sha, keys)) return new Promise<never>(() => {});
        return redis.evalsha(sha, keys, args);
      },
    });
    const { namespace } = objectInNode(
      { UPSTASH_REDIS_REST_URL: bed.server.url, UPSTASH_REDIS_REST_TOKEN: bed.server.token },
      { observeRedis: hanging },
    );
    const prefix = freshPrefix();
    // One object for every lock (the namespace has one), as `shardBy: "owner"` would make it.
    const watchdog = durableObjectWatchdog(namespace, { prefix });
    const client = bed.client({ prefix, watchdogTimeoutMs: LEASE_MS, watchdog });
    const rival = bed.client({ prefix });

    const stuck = await client.lock("stuck").acquire();
    await until(() => stuckRenewals > 1);
    const hungAt = Date.now();
    // Registered while the object's alarm waits on the hung renewal.
    const held = await client.lock("held").acquire();
    const watchedUntil = Date.now() + 3 * LEASE_MS;
    // Halfway through the hung call's 2 s budget: rounds ran every claim (~150 ms) meanwhile.
    let stuckRenewalsWhileHung: number | undefined;
    while (Date.now() < watchedUntil) {
      expect(await rival.lock("held").tryAcquire({ leaseMs: 5_000 })).toBeNull();
      if (stuckRenewalsWhileHung === undefined && Date.now() - hungAt >= 1_000) {
        stuckRenewalsWhileHung = stuckRenewals;
      }
      await sleepMs(100);
    }
    // No second renewal of "stuck" while its renewal is out (the one answered, the one hung).
    expect(stuckRenewalsWhileHung).toBe(2);
    expect(held.signal.aborted).toBe(false);
    const status = await watchdog.status(held);
    expect(status.state).toBe("renewing");
    expect(status.state === "unknown" ? 0 : status.renewals).toBeGreaterThanOrEqual(5);
    await held.release();
    await stuck.release().catch(() => {});
    await watchdog.settled();
  });
});

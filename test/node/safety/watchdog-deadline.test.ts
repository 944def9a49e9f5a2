/**
 * The Durable Object watchdog's bound for a holder that stopped heartbeating: its lock is free by
 * the last heartbeat + heartbeatTimeoutMs + one lease. A renewal sent just before that deadline
 * whose answer is lost must not be re-sent after it (a re-send would re-arm a full lease from
 * then). The real LockWatchdog in Node (SQLite storage, its alarm called by hand), the real
 * @upstash/redis client and REST server; only the object's renew requests are observed.
 */
import { describe, expect, it } from "vitest";
import { LockWatchdog } from "../../../src/durable-object/lock-watchdog.js";
import type { WatchdogNamespace } from "../../../src/durable-object/platform.js";
import { durableObjectWatchdog } from "../../../src/durable-object/watchdog.js";
import { LockClient, type RedisLike } from "../../../src/index.js";
import { EXTEND } from "../../../src/locks/exclusive/extend.js";
import { SqliteSql } from "../../chaos/durable-object.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../lock/testbed.js";

const HEARTBEAT_TIMEOUT_MS = 1_000;
const LEASE_MS = 600;

describe.each(backendKindsUnderTest())("Durable Object watchdog deadline on %s", (kind) => {
  const bed = useTestBed(kind);

  it("sends no renewal after the heartbeat deadline, re-sends included", async () => {
    const renewSha = await EXTEND.sha1();
    const inner = bed.redis();
    /** Set once the lock is registered: the latest the object may still send a renewal. */
    let deadline = Number.POSITIVE_INFINITY;
    const renewsSentAt: number[] = [];
    let lostOne = false;
    const isRenew = (sha: string | null, script: string | null) =>
      sha === renewSha || script === EXTEND.source;
    const send = async <T>(renew: boolean, run: () => Promise<T>): Promise<T> => {
      if (!renew) return run();
      renewsSentAt.push(Date.now());
      if (lostOne) return run();
      // The first renewal: it runs, and its answer is lost just after the deadline has passed.
      lostOne = true;
      await run();
      await sleepMs(deadline + 20 - Date.now());
      throw new TypeError("fetch failed");
    };
    const objectRedis: RedisLike = {
      eval: (script, keys, args) =>
        send(isRenew(null, script), () => inner.eval(script, keys, args)),
      evalsha: (sha, keys, args) => send(isRenew(sha, null), () => inner.evalsha(sha, keys, args)),
    };
    class ObservedWatchdog extends LockWatchdog {
      protected override createRedis(): RedisLike {
        return objectRedis;
      }
    }
    const object = new ObservedWatchdog(
      {
        storage: {
          sql: new SqliteSql(),
          getAlarm: async () => null,
          setAlarm: async () => {},
          deleteAlarm: async () => {},
          deleteAll: async () => {},
        },
      },
      {},
    );
    const namespace: WatchdogNamespace = {
      idFromName: (name) => name,
      get: () => ({ fetch: (input, init) => object.fetch(new Request(input, init)) }),
    };
    const prefix = freshPrefix();
    const client = new LockClient({
      redis: bed.redis(),
      prefix,
      watchdogTimeoutMs: LEASE_MS,
      watchdog: durableObjectWatchdog(namespace, {
        heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS,
        heartbeatIntervalMs: 0, // the holder "crashed": no heartbeat after the registration
        prefix,
      }),
    });
    await client.lock("job").acquire();
    // The registration is the last heartbeat: the object heard it before acquire() returned.
    deadline = Date.now() + HEARTBEAT_TIMEOUT_MS;

    // A third of the lease on, the renewal is due: the alarm sends it (well before the deadline).
    await sleepMs(LEASE_MS / 3 + 20);
    await object.alarm({ retryCount: 0, isRetry: false });
    expect(renewsSentAt).toHaveLength(1);
    expect(Date.now()).toBeGreaterThan(deadline);
    // Nothing more was sent for it: a re-send now would hold the lock a lease past the bound.
    await sleepMs(300);
    expect(renewsSentAt.filter((sentAt) => sentAt >= deadline)).toEqual([]);
    // The lock frees one lease after the renewal that did run.
    await until(async () => !(await client.lock("job").isLocked()), 2 * LEASE_MS);
    expect(renewsSentAt).toHaveLength(1);
  });
});

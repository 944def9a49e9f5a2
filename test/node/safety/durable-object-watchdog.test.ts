/**
 * The Durable Object watchdog under faults between the parts: the object's renewals near its
 * deadline, and calls to the object that never get an answer. The real LockWatchdog in Node
 * (SQLite storage, its alarm called by hand), the real @upstash/redis client and REST server.
 */
import { describe, expect, it } from "vitest";
import { LockWatchdog } from "../../../src/durable-object/lock-watchdog.js";
import type { WatchdogNamespace } from "../../../src/durable-object/platform.js";
import { durableObjectWatchdog } from "../../../src/durable-object/watchdog.js";
import {
  LockBackendError,
  LockClient,
  type LockEvent,
  LockLostError,
  type RedisLike,
} from "../../../src/index.js";
import { EXTEND } from "../../../src/locks/exclusive/extend.js";
import { SqliteSql } from "../../chaos/durable-object.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sentScript } from "../../support/sent-script.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../exclusive/testbed.js";

const HEARTBEAT_TIMEOUT_MS = 1_000;
const LEASE_MS = 600;

/** A LockWatchdog object in this process on `redis`, and a namespace whose stubs reach it. */
function objectInNode(redis: RedisLike) {
  class InNodeWatchdog extends LockWatchdog {
    protected override createRedis(): RedisLike {
      return redis;
    }
  }
  const object = new InNodeWatchdog(
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
  return { object, namespace };
}

/** `namespace`, except that the calls on `routes` reach the object and their answers never come. */
function answersWithheld(namespace: WatchdogNamespace, routes: readonly string[]) {
  const withheld: string[] = [];
  const wrapped: WatchdogNamespace = {
    idFromName: (name) => namespace.idFromName(name),
    get: (id) => {
      const stub = namespace.get(id);
      return {
        fetch: async (input, init) => {
          const route = new URL(input).pathname.split("/").pop() ?? "";
          const answer = await stub.fetch(input, init);
          if (!routes.includes(route)) return answer;
          withheld.push(route);
          return new Promise<never>(() => {});
        },
      };
    },
  };
  return { namespace: wrapped, withheld };
}

describe.each(backendKindsUnderTest())("Durable Object watchdog under faults on %s", (kind) => {
  const bed = useTestBed(kind);

  it("sends no renewal after the heartbeat deadline, re-sends included", async () => {
    const isExtend = await sentScript(EXTEND);
    const inner = bed.redis();
    /** Set once the lock is registered: the latest the object may still send a renewal. */
    let deadline = Number.POSITIVE_INFINITY;
    const renewsSentAt: number[] = [];
    let lostOne = false;
    const isRenew = (sha: string | null, script: string | null) => isExtend(script, sha);
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
    const { namespace, object } = objectInNode(objectRedis);
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

  it("a registration that gets no answer ends the hold as lost by its lease end, and is taken back", async () => {
    const { namespace } = objectInNode(bed.redis());
    const silent = answersWithheld(namespace, ["register"]);
    const prefix = freshPrefix();
    const watchdog = durableObjectWatchdog(silent.namespace, { prefix, heartbeatIntervalMs: 0 });
    const client = new LockClient({
      redis: bed.redis(),
      prefix,
      watchdogTimeoutMs: LEASE_MS,
      watchdog,
    });
    const lost: LockEvent[] = [];
    client.on("lockLost", (event) => lost.push(event));
    const acquiredAt = Date.now();
    const held = await client.lock("job").acquire();
    // The object got the registration; its answer never comes back. Nobody confirms that the
    // lease is renewed, so by the lease's end the holder must stop trusting it.
    await until(() => held.signal.aborted, LEASE_MS + 1_500);
    expect(Date.now() - acquiredAt).toBeLessThan(LEASE_MS + 1_000);
    expect(held.signal.reason).toBeInstanceOf(LockLostError);
    expect(lost).toHaveLength(1);
    expect(silent.withheld).toContain("register");
    // The registration it gave up on is taken back: the object renews nothing for it.
    await until(async () => (await watchdog.status(held)).state !== "renewing", 2_000);
  });

  it("heartbeat() and status() fail with LockBackendError when the object does not answer", async () => {
    const { namespace } = objectInNode(bed.redis());
    const silent = answersWithheld(namespace, ["heartbeat", "status"]);
    const watchdog = durableObjectWatchdog(silent.namespace, { requestTimeoutMs: 200 });
    const lock = { name: "job", owner: "a".repeat(32) };
    for (const ask of [() => watchdog.heartbeat(lock), () => watchdog.status(lock)]) {
      const startedAt = Date.now();
      const error = await ask().catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(LockBackendError);
      expect(String(error)).toContain("requestTimeoutMs");
      expect(Date.now() - startedAt).toBeLessThan(1_500);
    }
    await watchdog.settled();
  });
});

/**
 * Issue 41, case 0 through the Durable Object watchdog: a hold re-entered from a second client
 * (another invocation given the same `owner`) is registered by each client under its own
 * registration, and the object renews the hold while any of them lives. Whichever client releases
 * its re-entry first, the other's hold stays renewed and no other owner takes the lock; after the
 * last release the lock is free and the object keeps nothing. The real LockWatchdog in Node
 * (SQLite storage, its alarm a timer), on its default Redis client, against the REST server.
 */
import { describe, expect, it } from "vitest";
import { WATCHDOG_ROUTES, type WatchdogStatus } from "../../../src/durable-object/messages.js";
import {
  type DurableObjectWatchdog,
  durableObjectWatchdog,
} from "../../../src/durable-object/watchdog.js";
import type { LockClient } from "../../../src/index.js";
import { EXTEND } from "../../../src/locks/exclusive/extend.js";
import type { RedisLike } from "../../../src/transport/redis-like.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sentScript } from "../../support/sent-script.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";
import { objectInNode } from "./durable-object-in-node.js";

const OWNER = "reentry-owner-0123456789abcdef";
/** The lease each renewal sets; the object renews every third of it. */
const LEASE_MS = 1_000;

interface Hold {
  readonly name: string;
  readonly owner: string;
  readonly signal: AbortSignal;
  readonly fencingToken: number;
  release(): Promise<void>;
}

/** A lock kind the object renews with `lock.extend`, re-entrant by owner. */
interface Reentrant {
  acquire(options: { owner: string }): Promise<Hold>;
  tryAcquire(options: { leaseMs: number }): Promise<Hold | null>;
  holdCount(owner: string): Promise<number>;
  isLocked(): Promise<boolean>;
}

const KINDS: Record<string, (client: LockClient, name: string) => Reentrant> = {
  lock: (client, name) => client.lock(name),
  fairLock: (client, name) => client.fairLock(name),
  writeLock: (client, name) => client.readWriteLock(name).writeLock(),
};

function renewals(status: WatchdogStatus): number {
  return status.state === "unknown" ? 0 : status.renewals;
}

describe.each(backendKindsUnderTest())("Durable Object watchdog re-entry on %s", (backend) => {
  const bed = useTestBed(backend);

  /**
   * Two clients (two invocations) on one prefix and one LockWatchdog, each with its own watchdog
   * (so its own registrations), and a third client of another owner, in lease mode.
   */
  function twoClients() {
    const renewRequests = { count: 0 };
    const isExtend = sentScript(EXTEND);
    // Counts the renew requests the object sends (the clients' own scripts do not pass here).
    const countRenewals = (redis: RedisLike): RedisLike => ({
      async eval(script, keys, args) {
        if ((await isExtend)(script, null)) renewRequests.count += 1;
        return redis.eval(script, keys, args);
      },
      async evalsha(sha, keys, args) {
        if ((await isExtend)(null, sha)) renewRequests.count += 1;
        return redis.evalsha(sha, keys, args);
      },
    });
    const { object, namespace } = objectInNode(
      { UPSTASH_REDIS_REST_URL: bed.server.url, UPSTASH_REDIS_REST_TOKEN: bed.server.token },
      { observeRedis: countRenewals },
    );
    const prefix = freshPrefix();
    const client = () => {
      const watchdog = durableObjectWatchdog(namespace, { prefix });
      return { client: bed.client({ prefix, watchdogTimeoutMs: LEASE_MS, watchdog }), watchdog };
    };
    const rows = async () => {
      const listed = await object.fetch(new Request(`https://watchdog${WATCHDOG_ROUTES.list}`));
      return (await listed.json()) as WatchdogStatus[];
    };
    return {
      first: client(),
      second: client(),
      rival: bed.client({ prefix }),
      rows,
      renewRequests,
    };
  }

  /**
   * Three leases after the other client released: `held` is still the owner's (hold count 1),
   * not aborted, never taken by another owner, and renewed by the object (about nine renewals,
   * at least five) through its one registration left.
   */
  async function stillRenewed(
    lock: Reentrant,
    rival: Reentrant,
    watchdog: DurableObjectWatchdog,
    held: Hold,
  ): Promise<void> {
    const before = await watchdog.status(held);
    const watchedUntil = Date.now() + 3 * LEASE_MS;
    while (Date.now() < watchedUntil) {
      expect(await rival.tryAcquire({ leaseMs: 5_000 })).toBeNull();
      await sleepMs(250);
    }
    expect(await lock.holdCount(OWNER)).toBe(1);
    expect(held.signal.aborted).toBe(false);
    const after = await watchdog.status(held);
    expect(after).toMatchObject({ state: "renewing", registrations: 1 });
    expect(renewals(after) - renewals(before)).toBeGreaterThanOrEqual(5);
  }

  describe.each(Object.keys(KINDS))("%s", (kind) => {
    const make = KINDS[kind]!;

    it("the re-entering client releases first: the first client's hold stays renewed", async () => {
      const { first, second, rival, rows } = twoClients();
      const lock = make(first.client, "reentry");
      const held = await lock.acquire({ owner: OWNER });
      await first.watchdog.settled();
      const reentered = await make(second.client, "reentry").acquire({ owner: OWNER });
      await second.watchdog.settled();
      expect(reentered.fencingToken).toBe(held.fencingToken);
      expect(await lock.holdCount(OWNER)).toBe(2);
      expect(await first.watchdog.status(held)).toMatchObject({ registrations: 2 });
      await sleepMs(300);
      await reentered.release();
      await second.watchdog.settled();
      expect(await first.watchdog.status(held)).toMatchObject({
        state: "renewing",
        registrations: 1,
      });
      await stillRenewed(lock, make(rival, "reentry"), first.watchdog, held);
      await held.release();
      await first.watchdog.settled();
      expect(await lock.isLocked()).toBe(false);
      expect(await rows()).toEqual([]);
    });

    it("the first client releases first: the re-entering client's hold stays renewed", async () => {
      const { first, second, rival, rows } = twoClients();
      const held = await make(first.client, "reentry").acquire({ owner: OWNER });
      await first.watchdog.settled();
      const lock = make(second.client, "reentry");
      const reentered = await lock.acquire({ owner: OWNER });
      await second.watchdog.settled();
      expect(reentered.fencingToken).toBe(held.fencingToken);
      await sleepMs(300);
      await held.release();
      await first.watchdog.settled();
      expect(await second.watchdog.status(reentered)).toMatchObject({
        state: "renewing",
        registrations: 1,
      });
      await stillRenewed(lock, make(rival, "reentry"), second.watchdog, reentered);
      await reentered.release();
      await second.watchdog.settled();
      expect(await lock.isLocked()).toBe(false);
      expect(await rows()).toEqual([]);
    });
  });

  it("a hold registered by two clients costs one renewal per round, not one per registration", async () => {
    const { first, second, renewRequests } = twoClients();
    const held = await first.client.lock("reentry-cost").acquire({ owner: OWNER });
    await first.watchdog.settled();
    const reentered = await second.client.lock("reentry-cost").acquire({ owner: OWNER });
    await second.watchdog.settled();
    expect(await first.watchdog.status(held)).toMatchObject({ registrations: 2 });
    const from = { renewals: renewRequests.count, at: Date.now() };
    await sleepMs(2_000);
    const rounds = (Date.now() - from.at) / (LEASE_MS / 3);
    const sent = renewRequests.count - from.renewals;
    // About six rounds in two seconds, each one request for the hold (two apiece: twelve).
    expect(sent).toBeGreaterThanOrEqual(Math.floor(rounds) - 2);
    expect(sent).toBeLessThanOrEqual(Math.ceil(rounds) + 1);
    await reentered.release();
    await held.release();
  });
});

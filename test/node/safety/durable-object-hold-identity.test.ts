/**
 * Issue 28 through the Durable Object watchdog: a registration names one hold (its fencing
 * token), so an ended hold's registration never renews a later hold of the same owner (another
 * task of the same scope, or another invocation with the same owner). The real LockWatchdog in
 * Node (SQLite storage, its alarm a timer), on its default Redis client, against the REST server.
 */
import { describe, expect, it } from "vitest";
import { durableObjectWatchdog } from "../../../src/durable-object/watchdog.js";
import type { LockClient } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../exclusive/testbed.js";
import { objectInNode } from "./durable-object-in-node.js";

const OWNER = "scope-owner-0123456789abcdef";

/** A lock kind the object renews with `lock.extend`, as these cases use it. */
interface Exclusive {
  acquire(options: { owner: string; leaseMs?: number }): Promise<{
    readonly name: string;
    readonly owner: string;
    readonly signal: AbortSignal;
    readonly fencingToken: number;
    release(): Promise<void>;
  }>;
  forceRelease(): Promise<unknown>;
  isLocked(): Promise<boolean>;
}

const KINDS: Record<string, (client: LockClient, name: string) => Exclusive> = {
  lock: (client, name) => client.lock(name),
  fairLock: (client, name) => client.fairLock(name),
  writeLock: (client, name) => client.readWriteLock(name).writeLock(),
};

describe.each(backendKindsUnderTest())("Durable Object watchdog hold identity on %s", (backend) => {
  const bed = useTestBed(backend);

  /** A client in Durable Object watchdog mode (1 s lease, renewed every ~330 ms). */
  function watchdogClient() {
    const { namespace } = objectInNode({
      UPSTASH_REDIS_REST_URL: bed.server.url,
      UPSTASH_REDIS_REST_TOKEN: bed.server.token,
    });
    const prefix = freshPrefix();
    const watchdog = durableObjectWatchdog(namespace, { prefix });
    const client = bed.client({ prefix, watchdogTimeoutMs: 1_000, watchdog });
    return { client, watchdog };
  }

  describe.each(Object.keys(KINDS))("%s", (kind) => {
    const make = KINDS[kind]!;

    it("an ended hold's registration does not keep a later lease-mode hold of the same owner alive", async () => {
      const { client, watchdog } = watchdogClient();
      const lock = make(client, "identity");
      const ended = await lock.acquire({ owner: OWNER });
      await watchdog.settled();
      await lock.forceRelease();
      // Another task of the same scope takes the lock again with a 1 s lease, and crashes.
      const laterAt = Date.now();
      const later = await lock.acquire({ owner: OWNER, leaseMs: 1_000 });
      // Polled from the later acquisition on (never freed: Infinity).
      const freed = until(async () => !(await lock.isLocked()), 5_000).then(
        () => Date.now(),
        () => Number.POSITIVE_INFINITY,
      );
      expect(later.fencingToken).toBeGreaterThan(ended.fencingToken);
      // The later hold, never released, frees at its own 1 s lease (plus polling slack), not kept
      // alive by the old registration.
      expect((await freed) - laterAt).toBeLessThan(1_000 + 1_000);
      // The object's next renewal (≤ 1/3 s) finds the hold gone; the next automatic heartbeat
      // (every 1 s) brings that back: the old handle's signal aborts.
      await until(() => ended.signal.aborted, 4_000);
      expect(String(ended.signal.reason)).toContain("(gone)");
      expect(await watchdog.status({ name: "identity", owner: OWNER })).toMatchObject({
        state: "ended",
        reason: "gone",
        fencingToken: ended.fencingToken,
      });
    });

    it("a later watchdog-mode hold of the same owner has a registration of its own", async () => {
      const { client, watchdog } = watchdogClient();
      const lock = make(client, "identity-renewed");
      const ended = await lock.acquire({ owner: OWNER });
      await watchdog.settled();
      await lock.forceRelease();
      const later = await lock.acquire({ owner: OWNER });
      await watchdog.settled();
      await until(() => ended.signal.aborted, 4_000);
      // Three leases on, the later hold is still renewed, by its own registration.
      await sleepMs(3_000);
      expect(later.signal.aborted).toBe(false);
      expect(await lock.isLocked()).toBe(true);
      expect(await watchdog.status(later)).toMatchObject({
        state: "renewing",
        fencingToken: later.fencingToken,
      });
      expect(await watchdog.status(ended)).toMatchObject({
        state: "ended",
        reason: "gone",
        fencingToken: ended.fencingToken,
      });
      await later.release();
      await watchdog.settled();
      expect(await lock.isLocked()).toBe(false);
      // Deregistered ("unknown"), or "gone" when a renewal ran between release and deregistration.
      expect((await watchdog.status(later)).state).not.toBe("renewing");
    });
  });
});

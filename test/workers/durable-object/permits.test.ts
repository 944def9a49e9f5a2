/**
 * Semaphore permit holds in Durable Object watchdog mode, as lock holds: the object renews them
 * with `semaphore.extend` (the holder sends nothing), a release deregisters them, and a hold lost
 * under the object (its lease passed, its entry removed) ends its renewal and aborts the
 * holder's signal at the next heartbeat, never re-created (redis-semaphore#175). Real alarms,
 * real Redis (through the local server), real time.
 */
import { Redis } from "@upstash/redis/cloudflare";
import { describe, expect, it } from "vitest";
import { type LockEvent, LockLostError, type PermitHandle } from "../../../src/index.js";
import { holdMember } from "../../../src/locks/semaphore/extend.js";
import { semaphoreKeys } from "../../../src/locks/semaphore/keys.js";
import {
  objectLeft,
  plainClient,
  renewals,
  STEADY_TIMEOUT_MS,
  server,
  sleepMs,
  until,
  watchdogBed,
} from "./support.js";

const LEASE_MS = STEADY_TIMEOUT_MS;
const HEARTBEAT_MS = 150;
/** What a loaded test machine adds to a bound: requests, alarm delivery, polling. */
const SLACK_MS = 750;

const redis = new Redis({ url: server.url, token: server.token });

/** Ways a permit hold ends under the object, without its holder. */
const losses: [string, (prefix: string, name: string, held: PermitHandle) => Promise<unknown>][] = [
  [
    // As after a pause longer than the lease: the hold's entry says its lease ended at server
    // ms 1 (the key itself lives on, as beside a longer hold).
    "its lease passed",
    async (prefix, name, held) => {
      const leases = semaphoreKeys(prefix, name).leases;
      const member = holdMember(held.owner, held.fencingToken);
      const [permits] = String(await redis.hget(leases, member)).split(" ");
      return redis.hset(leases, { [member]: `${permits} - 1` });
    },
  ],
  [
    // An administrator's clean-up: every hold of the semaphore removed.
    "its semaphore's holds were removed",
    (prefix, name) => {
      const keys = semaphoreKeys(prefix, name);
      return redis.del(keys.leases);
    },
  ],
];

describe(`Durable Object watchdog holding semaphore permits on ${server.kind}`, () => {
  it("keeps a permit hold through several leases with no timers or requests in the holder", async () => {
    const bed = watchdogBed(LEASE_MS, { heartbeatIntervalMs: 0 });
    const held = await bed.client.semaphore("kept", { initialPermits: 2 }).acquire({ permits: 2 });
    expect(held.renewing).toBe(true);
    await bed.watchdog.settled();
    expect(bed.namespace.calls).toEqual({ register: 1 });

    // Three lease lengths: without renewal the permits would have come back after the first.
    const observer = plainClient(bed.client.prefix).semaphore("kept");
    const threeLeases = Date.now() + 3 * LEASE_MS;
    while (Date.now() < threeLeases) {
      expect(await observer.state()).toMatchObject({ held: 2, holds: 1, available: 0 });
      await sleepMs(100);
    }
    expect(held.signal.aborted, String(held.signal.reason)).toBe(false);
    // The holder sent its acquisition and nothing else: the object renewed.
    expect(bed.redisCalls()).toBe(1);
    expect(bed.namespace.calls).toEqual({ register: 1 });
    const status = await bed.watchdog.status(held);
    expect(status).toMatchObject({
      state: "renewing",
      key: semaphoreKeys(bed.client.prefix, "kept").leases,
      owner: held.owner,
      fencingToken: held.fencingToken,
    });
    expect(renewals(status)).toBeGreaterThanOrEqual(4);
    await held.release();
  });

  it("stops renewing a released permit hold: deregistered at once, the object left empty", async () => {
    const bed = watchdogBed(LEASE_MS, { heartbeatIntervalMs: 0 });
    const semaphore = bed.client.semaphore("released", { initialPermits: 1 });
    const held = await semaphore.acquire();
    await bed.watchdog.settled();
    await sleepMs(2 * LEASE_MS);
    expect(renewals(await bed.watchdog.status(held))).toBeGreaterThanOrEqual(2);

    await held.release();
    await bed.watchdog.settled();
    expect(bed.namespace.calls).toEqual({ register: 1, status: 1, deregister: 1 });
    expect(await semaphore.availablePermits()).toBe(1);
    expect(await bed.watchdog.status(held)).toMatchObject({ state: "unknown" });
    // The object forgot the hold and holds nothing, not even an alarm.
    expect(await objectLeft(bed.client, "released", "semaphore")).toEqual({
      alarm: null,
      tables: 0,
    });
  });

  it.each(losses)(
    "ends renewal when %s, aborts the holder within a renewal and a heartbeat, and never re-creates the hold",
    async (_, lose) => {
      const bed = watchdogBed(LEASE_MS, { heartbeatIntervalMs: HEARTBEAT_MS });
      const lost: LockEvent[] = [];
      bed.client.on("lockLost", (event) => lost.push(event));
      const name = "lost";
      const held = await bed.client.semaphore(name, { initialPermits: 1 }).acquire();
      await bed.watchdog.settled();
      await until(async () => renewals(await bed.watchdog.status(held)) >= 1, 3_000);

      await lose(bed.client.prefix, name, held);
      const lostAt = Date.now();
      // The permit is free at once for another holder, whom the old hold's renewals never displace.
      const other = plainClient(bed.client.prefix).semaphore(name);
      const taken = await other.tryAcquire({ leaseMs: 10_000 });
      expect(taken).not.toBeNull();

      await until(() => held.signal.aborted, 3_000);
      // The object stops at its next renewal (a third of the lease), the holder hears at its
      // next heartbeat.
      expect(Date.now() - lostAt).toBeLessThanOrEqual(LEASE_MS / 3 + HEARTBEAT_MS + SLACK_MS);
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect(String(held.signal.reason)).toContain("(gone)");
      expect(lost).toHaveLength(1);
      expect(lost[0]).toMatchObject({ type: "lockLost", name, owner: held.owner });
      expect(await bed.watchdog.status(held)).toMatchObject({ state: "ended", reason: "gone" });
      // The holder itself sent only its acquisition: loss came from the object.
      expect(bed.redisCalls()).toBe(1);

      // Never re-created: one hold, the other's, within the capacity, after more renewal rounds.
      await sleepMs(LEASE_MS);
      const keys = semaphoreKeys(bed.client.prefix, name);
      expect(await redis.hget(keys.leases, holdMember(held.owner, held.fencingToken))).toBeNull();
      expect(await other.state()).toMatchObject({ capacity: 1, held: 1, holds: 1 });
      await taken?.release();
    },
  );

  it("frees a crashed holder's permits within heartbeatTimeoutMs + watchdogTimeoutMs", async () => {
    const heartbeatTimeoutMs = 1_200;
    const bed = watchdogBed(LEASE_MS, {
      heartbeatTimeoutMs,
      heartbeatIntervalMs: 0,
      maxHoldMs: 120_000,
    });
    const held = await bed.client.semaphore("crash", { initialPermits: 1 }).acquire();
    // Alive for a while: manual heartbeats keep the hold beyond the heartbeat timeout.
    let lastHeartbeatAt = 0;
    for (let beat = 0; beat < 4; beat++) {
      await sleepMs(400);
      const status = await bed.watchdog.heartbeat(held);
      expect(status.state).toBe("renewing");
      if (status.state === "renewing") lastHeartbeatAt = status.lastHeartbeatAt;
    }
    // Then the holder "crashes": no heartbeat, no release. Another owner waits for the permit.
    const other = plainClient(bed.client.prefix).semaphore("crash");
    const next = await other.acquire({ leaseMs: 5_000, waitMs: 20_000, wait: { maxPolls: 5_000 } });
    const freedAt = Date.now();
    expect(next.fencingToken).toBe(held.fencingToken + 1);
    expect(freedAt).toBeGreaterThanOrEqual(lastHeartbeatAt + heartbeatTimeoutMs);
    expect(freedAt).toBeLessThanOrEqual(lastHeartbeatAt + heartbeatTimeoutMs + LEASE_MS + SLACK_MS);
    expect(await bed.watchdog.status(held)).toMatchObject({
      state: "ended",
      reason: "heartbeat-timeout",
    });
    await next.release();
  });

  it("forget() from another invocation stops a permit hold's renewal; its permits return within the lease", async () => {
    const bed = watchdogBed(LEASE_MS, { heartbeatIntervalMs: 0 });
    const semaphore = bed.client.semaphore("forgotten", { initialPermits: 1 });
    // A lock of the same name and owner beside it: a different hold, left alone.
    const held = await semaphore.acquire();
    const lock = await bed.client.lock("forgotten").acquire({ owner: held.owner });
    await bed.watchdog.settled();
    // Another invocation knows only the name, owner and prefix; it says which kind it means.
    const elsewhere = watchdogBed(LEASE_MS, { heartbeatIntervalMs: 0 }, bed.client.prefix);
    const ref = {
      name: "forgotten",
      owner: held.owner,
      prefix: bed.client.prefix,
      kind: "semaphore",
    } as const;
    expect(await elsewhere.watchdog.forget(ref)).toMatchObject({
      state: "ended",
      reason: "released",
    });
    await until(async () => (await semaphore.availablePermits()) === 1, LEASE_MS + 3_000);
    expect(await bed.watchdog.heartbeat(held)).toMatchObject({ reason: "released" });
    expect(held.signal.aborted).toBe(true);
    // The lock of the same name and owner is still renewed.
    expect(lock.signal.aborted, String(lock.signal.reason)).toBe(false);
    expect(await bed.watchdog.status(lock)).toMatchObject({ state: "renewing" });
    await lock.release();
  });
});

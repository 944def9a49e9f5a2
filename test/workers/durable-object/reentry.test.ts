/**
 * Issue 41, case 0 in workerd: one hold re-entered from two LockClients (two invocations given
 * the same `owner`) has one registration per client with the LockWatchdog, and the object renews
 * the hold while any of them lives. Whichever client releases its re-entry first, the other's
 * hold stays renewed (no other owner gets the lock), and once both released the lock is free and
 * the object keeps nothing. Then the object's side, by hand: registrations racing, late,
 * repeated and foreign deregistrations, per-registration caps, heartbeats and a hold found gone.
 * Real alarms, real Redis, real time.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { WatchdogStatus } from "../../../src/durable-object/index.js";
import {
  WATCHDOG_ROUTES as ROUTES,
  WATCHDOG_PROTOCOL,
} from "../../../src/durable-object/messages.js";
import type { LockHandle } from "../../../src/index.js";
import {
  objectLeft,
  objectOf,
  plainClient,
  renewals,
  server,
  sleepMs,
  until,
  type WatchdogBed,
  watchdogBed,
} from "./support.js";

const OWNER = "reentry-owner-0123456789abcdef";
/**
 * The lease each renewal sets; the object renews every third of it. 2 s: a loaded CI machine
 * delayed the object's alarms past a 1 s lease once (a rival took the lock with token 2); without
 * the fix a rival takes it one lease after the other client's release, well within WATCHED_MS.
 */
const LEASE_MS = 2_000;
/** How long the remaining holder is watched after the other released: three leases. */
const WATCHED_MS = 3 * LEASE_MS;
/** Two clients' registration ids of one hold. */
const FIRST = "00000000000000000000000a";
const SECOND = "00000000000000000000000b";

/** Two clients of one prefix (two invocations), each with its own watchdog and registrations. */
function twoClients(): [WatchdogBed, WatchdogBed] {
  const first = watchdogBed(LEASE_MS);
  return [first, watchdogBed(LEASE_MS, {}, first.client.prefix)];
}

/**
 * Watches `held` for three leases after the other client released: it stays held by the owner,
 * its signal is not aborted, another owner cannot take the lock, and the object keeps renewing
 * the hold (its renewal count grows) with one registration left.
 */
async function stillRenewed(bed: WatchdogBed, held: LockHandle): Promise<void> {
  const lock = bed.client.lock(held.name);
  const rival = plainClient(bed.client.prefix).lock(held.name);
  const before = await bed.watchdog.status(held);
  const watchedUntil = Date.now() + WATCHED_MS;
  while (Date.now() < watchedUntil) {
    expect(await rival.tryAcquire({ leaseMs: 5_000 })).toBeNull();
    await sleepMs(250);
  }
  expect(await lock.holdCount(OWNER)).toBe(1);
  expect(held.signal.aborted, String(held.signal.reason)).toBe(false);
  const after = await bed.watchdog.status(held);
  expect(after).toMatchObject({
    state: "renewing",
    fencingToken: held.fencingToken,
    registrations: 1,
  });
  // A renewal every third of the lease: about nine in three leases, at least five.
  expect(renewals(after) - renewals(before)).toBeGreaterThanOrEqual(5);
}

/** After the last release: the lock is free and the object has neither rows nor alarm left. */
async function nothingLeft(bed: WatchdogBed, name: string): Promise<void> {
  expect(await bed.client.lock(name).isLocked()).toBe(false);
  await until(async () => (await objectLeft(bed.client, name)).tables === 0, 2_000);
  expect(await objectLeft(bed.client, name)).toEqual({ alarm: null, tables: 0 });
}

describe(`Durable Object watchdog: one hold re-entered from two clients on ${server.kind}`, () => {
  it("the re-entering client releases first: the first client's hold stays renewed", async () => {
    const [a, b] = twoClients();
    const held = await a.client.lock("reentry-b-first").acquire({ owner: OWNER });
    await a.watchdog.settled();
    const reentered = await b.client.lock("reentry-b-first").acquire({ owner: OWNER });
    await b.watchdog.settled();
    expect(reentered.fencingToken).toBe(held.fencingToken);
    expect(await a.client.lock("reentry-b-first").holdCount(OWNER)).toBe(2);
    // One registration per client, both of the one hold.
    expect(await a.watchdog.status(held)).toMatchObject({ state: "renewing", registrations: 2 });
    await sleepMs(300);
    await reentered.release();
    await b.watchdog.settled();
    expect(await a.watchdog.status(held)).toMatchObject({ state: "renewing", registrations: 1 });
    await stillRenewed(a, held);
    await held.release();
    await a.watchdog.settled();
    await nothingLeft(a, "reentry-b-first");
  });

  it("the first client releases first: the re-entering client's hold stays renewed", async () => {
    const [a, b] = twoClients();
    const held = await a.client.lock("reentry-a-first").acquire({ owner: OWNER });
    await a.watchdog.settled();
    const reentered = await b.client.lock("reentry-a-first").acquire({ owner: OWNER });
    await b.watchdog.settled();
    expect(reentered.fencingToken).toBe(held.fencingToken);
    await sleepMs(300);
    await held.release();
    await a.watchdog.settled();
    expect(await b.watchdog.status(reentered)).toMatchObject({
      state: "renewing",
      registrations: 1,
    });
    await stillRenewed(b, reentered);
    await reentered.release();
    await b.watchdog.settled();
    await nothingLeft(b, "reentry-a-first");
  });
});

/** A message to the object that renews `key` (sharded by lock), answered by a status. */
async function send(key: string, path: string, body: unknown): Promise<WatchdogStatus> {
  const stub = env.LOCK_WATCHDOG.get(env.LOCK_WATCHDOG.idFromName(`lock:${key}`));
  const response = await stub.fetch(`https://watchdog${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as WatchdogStatus;
}

describe(`the LockWatchdog's registrations of one hold on ${server.kind}`, () => {
  /**
   * A lock held by `owner` for a 600 ms lease (no renewal of its own), and the messages two
   * clients' registrations of that hold would send, by hand.
   */
  async function heldByHand(name: string) {
    const leaseMs = 600;
    const bed = watchdogBed(leaseMs, { heartbeatIntervalMs: 0 });
    const lock = bed.client.lock(name);
    const held = await lock.acquire({ owner: OWNER, leaseMs });
    const key = `${bed.client.prefix}:{${name}}`;
    const hold = { v: WATCHDOG_PROTOCOL, key, owner: OWNER, fencingToken: held.fencingToken };
    const registration = (
      id: string,
      limits: { maxHoldMs: number; heartbeatTimeoutMs: number | null },
    ) => ({
      ...hold,
      kind: "lock",
      registration: id,
      leaseMs,
      sinceConfirmedMs: 0,
      ...limits,
    });
    return { bed, lock, held, key, hold, registration, leaseMs };
  }

  it("two registrations racing are two rows; a late, repeated or foreign deregistration removes only its own", async () => {
    const { bed, lock, key, hold, registration } = await heldByHand("rows");
    const limits = { maxHoldMs: 60_000, heartbeatTimeoutMs: null };
    const [a, b] = [registration(FIRST, limits), registration(SECOND, limits)];
    await Promise.all([send(key, ROUTES.register, a), send(key, ROUTES.register, b)]);
    // A re-sent registration replaces its own row, never the other's.
    expect(await send(key, ROUTES.register, b)).toMatchObject({ registrations: 2 });
    const deregister = (registration: string, fencingToken = hold.fencingToken) =>
      send(key, ROUTES.deregister, { ...hold, fencingToken, registration });
    // Another hold of the owner (another token) is not this one's: nothing removed.
    expect(await deregister(SECOND, hold.fencingToken + 1)).toMatchObject({ state: "unknown" });
    expect(await send(key, ROUTES.status, hold)).toMatchObject({ registrations: 2 });
    expect(await deregister(SECOND)).toMatchObject({ state: "renewing", registrations: 1 });
    // Repeated (a late copy): the first registration stays.
    expect(await deregister(SECOND)).toMatchObject({ state: "renewing", registrations: 1 });
    // Three leases on, the remaining registration has kept the hold.
    await sleepMs(1_800);
    expect(await lock.isHeldBy(OWNER)).toBe(true);
    expect(await deregister(FIRST)).toMatchObject({ state: "unknown" });
    expect(await objectLeft(bed.client, "rows")).toEqual({ alarm: null, tables: 0 });
    await until(async () => !(await lock.isLocked()), 1_500);
  });

  it("each registration ends at its own maxHoldMs; the hold is renewed until the last one's", async () => {
    const { lock, key, hold, registration, leaseMs } = await heldByHand("caps");
    await send(
      key,
      ROUTES.register,
      registration(FIRST, { maxHoldMs: 700, heartbeatTimeoutMs: null }),
    );
    await send(
      key,
      ROUTES.register,
      registration(SECOND, { maxHoldMs: 2_000, heartbeatTimeoutMs: null }),
    );
    // Past the first cap and two leases: the second registration keeps the hold.
    await sleepMs(1_500);
    expect(await lock.isHeldBy(OWNER)).toBe(true);
    expect(await send(key, ROUTES.status, hold)).toMatchObject({
      state: "renewing",
      registrations: 1,
    });
    // Past the second cap the renewal stops: the lock frees within a lease (plus a round).
    await until(async () => (await send(key, ROUTES.status, hold)).state === "ended", 1_500);
    expect(await send(key, ROUTES.status, hold)).toMatchObject({ reason: "max-hold" });
    await until(async () => !(await lock.isLocked()), leaseMs + 400);
  });

  it("a heartbeat from either client counts for every registration of the hold", async () => {
    const { lock, key, hold, registration, leaseMs } = await heldByHand("beats");
    const limits = { maxHoldMs: 60_000, heartbeatTimeoutMs: 900 };
    await send(key, ROUTES.register, registration(FIRST, limits));
    await send(key, ROUTES.register, registration(SECOND, limits));
    // Twice the heartbeat timeout, heartbeats of the hold every 300 ms: both registrations live.
    const beatUntil = Date.now() + 1_800;
    let lastBeatAt = 0;
    while (Date.now() < beatUntil) {
      lastBeatAt = Date.now();
      expect(await send(key, ROUTES.heartbeat, hold)).toMatchObject({ registrations: 2 });
      await sleepMs(300);
    }
    expect(await lock.isHeldBy(OWNER)).toBe(true);
    // Heartbeats stop: both registrations end, the lock frees within timeout + lease (+ slack),
    // not before the timeout.
    await until(async () => !(await lock.isLocked()), 900 + leaseMs + 600);
    expect(Date.now() - lastBeatAt).toBeGreaterThanOrEqual(900);
    expect(await send(key, ROUTES.status, hold)).toMatchObject({
      state: "ended",
      reason: "heartbeat-timeout",
    });
  });

  it("a hold found gone ends every registration of it; a deregistration after that revives nothing", async () => {
    const { lock, key, hold, registration } = await heldByHand("gone");
    const limits = { maxHoldMs: 60_000, heartbeatTimeoutMs: null };
    await send(key, ROUTES.register, registration(FIRST, limits));
    await send(key, ROUTES.register, registration(SECOND, limits));
    await lock.forceRelease();
    await until(async () => (await send(key, ROUTES.status, hold)).state === "ended", 1_000);
    expect(await send(key, ROUTES.status, hold)).toMatchObject({ reason: "gone" });
    const late = await send(key, ROUTES.deregister, { ...hold, registration: SECOND });
    expect(late.state).not.toBe("renewing");
    await sleepMs(400);
    expect(await lock.isLocked()).toBe(false);
  });

  it("a hold an older object kept in its one-row-per-hold table is renewed on, and joined", async () => {
    const { bed, lock, key, hold, registration, leaseMs } = await heldByHand("adopted");
    // The table objects kept until now (one row per hold, with its kind), holding this hold.
    await runInDurableObject(objectOf(bed.client, "adopted"), async (_object, state) => {
      state.storage.sql.exec(`CREATE TABLE edgelock_watchdog_leases_v2 (
        lock_key TEXT NOT NULL, owner TEXT NOT NULL, fencing_token INTEGER NOT NULL,
        registration TEXT NOT NULL, lease_ms INTEGER NOT NULL, registered_at INTEGER NOT NULL,
        hold_until INTEGER NOT NULL, heartbeat_timeout_ms INTEGER,
        last_heartbeat_at INTEGER NOT NULL, confirmed_at INTEGER NOT NULL,
        renewals INTEGER NOT NULL, last_renewed_at INTEGER, next_renewal_at INTEGER NOT NULL,
        failures INTEGER NOT NULL, kind TEXT NOT NULL DEFAULT 'lock',
        PRIMARY KEY (lock_key, owner, fencing_token))`);
      const now = Date.now();
      state.storage.sql.exec(
        "INSERT INTO edgelock_watchdog_leases_v2 VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, 0, NULL, ?, 0, 'lock')",
        key,
        OWNER,
        hold.fencingToken,
        FIRST,
        leaseMs,
        now,
        now + 60_000,
        now,
        now,
        now + 100,
      );
      await state.storage.setAlarm(now + 100);
    });
    // Three leases: the lock would have expired after the first without its renewal.
    await sleepMs(3 * leaseMs);
    expect(await lock.isHeldBy(OWNER)).toBe(true);
    expect(await send(key, ROUTES.status, hold)).toMatchObject({
      state: "renewing",
      registrations: 1,
    });
    // Another client's registration joins it; the adopted one's deregistration leaves that one.
    const limits = { maxHoldMs: 60_000, heartbeatTimeoutMs: null };
    expect(await send(key, ROUTES.register, registration(SECOND, limits))).toMatchObject({
      registrations: 2,
    });
    const deregister = (id: string) => send(key, ROUTES.deregister, { ...hold, registration: id });
    expect(await deregister(FIRST)).toMatchObject({ state: "renewing", registrations: 1 });
    expect(await deregister(SECOND)).toMatchObject({ state: "unknown" });
    expect(await objectLeft(bed.client, "adopted")).toEqual({ alarm: null, tables: 0 });
  });
});

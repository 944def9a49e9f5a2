/**
 * The watchdog's edges: options and lock references are checked before any request, the object
 * refuses malformed or foreign-version messages without storing anything, registrations and
 * stored rows from before hold kinds are renewed as locks, and the host Worker's routes hold a
 * lock across requests through the object.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { durableObjectWatchdog } from "../../../src/durable-object/index.js";
import { WATCHDOG_PROTOCOL, WATCHDOG_ROUTES } from "../../../src/durable-object/messages.js";
import { LockClient, LockInputError } from "../../../src/index.js";
import { handleLockApi } from "../../../worker/index.js";
import {
  countingNamespace,
  objectOf,
  renewals,
  STEADY_TIMEOUT_MS,
  server,
  sleepMs,
  until,
  watchdogBed,
} from "./support.js";

const OWNER = "0123456789abcdef0123456789abcdef";

function send(objectName: string, path: string, body: unknown): Promise<Response> {
  const stub = env.LOCK_WATCHDOG.get(env.LOCK_WATCHDOG.idFromName(objectName));
  return stub.fetch(`https://watchdog${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

const register = {
  v: WATCHDOG_PROTOCOL,
  kind: "lock",
  key: "edgelock:{protocol}",
  owner: OWNER,
  fencingToken: 1,
  registration: "00112233445566778899aabb",
  leaseMs: 30_000,
  sinceConfirmedMs: 0,
  maxHoldMs: 60_000,
  heartbeatTimeoutMs: null,
};

/** The leases table as objects deployed before hold kinds made it (protocol 2, no kind column). */
const PRE_KIND_LEASES = `CREATE TABLE edgelock_watchdog_leases_v2 (
  lock_key TEXT NOT NULL, owner TEXT NOT NULL, fencing_token INTEGER NOT NULL,
  registration TEXT NOT NULL, lease_ms INTEGER NOT NULL, registered_at INTEGER NOT NULL,
  hold_until INTEGER NOT NULL, heartbeat_timeout_ms INTEGER, last_heartbeat_at INTEGER NOT NULL,
  confirmed_at INTEGER NOT NULL, renewals INTEGER NOT NULL, last_renewed_at INTEGER,
  next_renewal_at INTEGER NOT NULL, failures INTEGER NOT NULL,
  PRIMARY KEY (lock_key, owner, fencing_token))`;

describe(`the Durable Object watchdog's protocol on ${server.kind}`, () => {
  it("checks options and lock references before any request", async () => {
    const namespace = countingNamespace();
    expect(() => durableObjectWatchdog(undefined as never)).toThrow(LockInputError);
    expect(() => durableObjectWatchdog(namespace, { maxHoldMs: 10 })).toThrow(LockInputError);
    expect(() => durableObjectWatchdog(namespace, { shardBy: "colo" as never })).toThrow(
      LockInputError,
    );
    expect(() => durableObjectWatchdog(namespace, { requestTimeoutMs: 50 })).toThrow(
      /requestTimeoutMs/,
    );
    expect(durableObjectWatchdog(namespace, { heartbeatTimeoutMs: 300 }).options).toMatchObject({
      heartbeatIntervalMs: 100,
      maxHoldMs: 900_000,
      shardBy: "lock",
      requestTimeoutMs: 2_000,
    });
    expect(() =>
      durableObjectWatchdog(namespace, { heartbeatTimeoutMs: 300, heartbeatIntervalMs: 300 }),
    ).toThrow(/shorter than heartbeatTimeoutMs/);
    expect(() => durableObjectWatchdog(namespace, { heartbeatMs: 1 } as never)).toThrow(
      /unknown option "heartbeatMs"/,
    );
    expect(
      () => new LockClient({ redis: {} as never, watchdog: durableObjectWatchdog(namespace) }),
    ).toThrow(LockInputError);
    const watchdog = durableObjectWatchdog(namespace);
    await expect(watchdog.heartbeat({ name: "a{b}", owner: OWNER })).rejects.toThrow(
      LockInputError,
    );
    await expect(watchdog.status({ name: "a", owner: "short" })).rejects.toThrow(LockInputError);
    await expect(watchdog.forget({ name: "a", owner: OWNER, prefix: "" })).rejects.toThrow(
      LockInputError,
    );
    expect(namespace.total()).toBe(0);
  });

  it("refuses malformed messages and other protocol versions, storing nothing", async () => {
    const object = "lock:edgelock:{protocol}";
    const refusals: [unknown, RegExp][] = [
      ["not json", /not JSON/],
      [{ ...register, v: 1 }, /protocol version 1/],
      [{ ...register, kind: "fair-lock" }, /kind must be "lock" or "semaphore"/],
      [{ ...register, key: "edgelock:protocol" }, /lock key/],
      // The key is the kind's: a lock's key is no permit hold, a semaphore's no lock.
      [{ ...register, kind: "semaphore" }, /semaphore key <prefix>:\{<name>\}:semaphore:leases/],
      [{ ...register, key: "edgelock:{protocol}:semaphore:leases" }, /lock key/],
      [{ ...register, owner: "me" }, /owner/],
      [{ ...register, leaseMs: 5 }, /leaseMs/],
      [{ ...register, registration: "Z" }, /registration/],
      [{ ...register, extra: 1 }, /unknown option "extra"/],
      [{ ...register, fencingToken: undefined }, /fencingToken/],
      [{ ...register, fencingToken: null }, /fencingToken/],
      [{ ...register, fencingToken: 0 }, /fencingToken/],
      [{ ...register, fencingToken: 1.5 }, /fencingToken/],
      [{ ...register, fencingToken: "1" }, /fencingToken/],
    ];
    for (const [body, message] of refusals) {
      const response = await send(object, WATCHDOG_ROUTES.register, body);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: string }).error).toMatch(message);
    }
    const hold = {
      v: WATCHDOG_PROTOCOL,
      key: "edgelock:{protocol}",
      owner: OWNER,
      fencingToken: 1,
    };
    const queries: [string, unknown, RegExp][] = [
      [WATCHDOG_ROUTES.heartbeat, { ...hold, v: 1 }, /protocol version 1/],
      [WATCHDOG_ROUTES.heartbeat, { ...hold, key: "x" }, /lock key .* or a semaphore key/],
      [WATCHDOG_ROUTES.status, { ...hold, key: "edgelock:{protocol}:semaphore" }, /semaphore key/],
      [WATCHDOG_ROUTES.heartbeat, { ...hold, fencingToken: undefined }, /fencingToken/],
      [WATCHDOG_ROUTES.status, { ...hold, fencingToken: -1 }, /fencingToken/],
      [WATCHDOG_ROUTES.status, { ...hold, registration: null }, /unknown option "registration"/],
      [WATCHDOG_ROUTES.deregister, hold, /registration/],
      [
        WATCHDOG_ROUTES.deregister,
        { ...hold, registration: null, fencingToken: 0 },
        /fencingToken/,
      ],
      // A registration is one hold's: naming it without the hold is a mistake, not "every hold".
      [
        WATCHDOG_ROUTES.deregister,
        { ...hold, fencingToken: null, registration: register.registration },
        /names its hold/,
      ],
    ];
    for (const [route, body, message] of queries) {
      const response = await send(object, route, body);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: string }).error).toMatch(message);
    }
    const stub = env.LOCK_WATCHDOG.get(env.LOCK_WATCHDOG.idFromName(object));
    const list = await stub.fetch(`https://watchdog${WATCHDOG_ROUTES.list}`);
    expect(await list.json()).toEqual([]);
  });

  it("a well-formed registration is renewing at once and listed until deregistered", async () => {
    const object = "lock:edgelock:{protocol-ok}";
    const key = "edgelock:{protocol-ok}";
    const registered = await send(object, WATCHDOG_ROUTES.register, { ...register, key });
    expect(registered.status).toBe(200);
    expect(await registered.json()).toMatchObject({
      state: "renewing",
      key,
      owner: OWNER,
      renewals: 0,
    });
    const stub = env.LOCK_WATCHDOG.get(env.LOCK_WATCHDOG.idFromName(object));
    expect(await (await stub.fetch(`https://watchdog${WATCHDOG_ROUTES.list}`)).json()).toHaveLength(
      1,
    );
    // A late deregistration of another registration does not remove this one.
    const stale = await send(object, WATCHDOG_ROUTES.deregister, {
      v: WATCHDOG_PROTOCOL,
      key,
      owner: OWNER,
      fencingToken: 1,
      registration: "ffffffffffffffffffffffff",
    });
    expect(await stale.json()).toMatchObject({ state: "renewing" });
    const gone = await send(object, WATCHDOG_ROUTES.deregister, {
      v: WATCHDOG_PROTOCOL,
      key,
      owner: OWNER,
      fencingToken: 1,
      registration: register.registration,
    });
    expect(await gone.json()).toMatchObject({ state: "unknown", fencingToken: 1 });
  });

  it("a permit hold's registration, re-sent, is one row under its semaphore key", async () => {
    const key = "edgelock:{protocol-permits}:semaphore:leases";
    const object = `lock:${key}`;
    const permits = { ...register, kind: "semaphore", key };
    for (const _copy of [1, 2]) {
      const registered = await send(object, WATCHDOG_ROUTES.register, permits);
      expect(registered.status).toBe(200);
      expect(await registered.json()).toMatchObject({ state: "renewing", key, renewals: 0 });
    }
    const stub = env.LOCK_WATCHDOG.get(env.LOCK_WATCHDOG.idFromName(object));
    expect(await (await stub.fetch(`https://watchdog${WATCHDOG_ROUTES.list}`)).json()).toHaveLength(
      1,
    );
    // Later messages name the hold by the same key; a lock of the same name is another hold.
    const hold = { v: WATCHDOG_PROTOCOL, key, owner: OWNER, fencingToken: 1 };
    const lockOfSameName = { ...hold, key: "edgelock:{protocol-permits}" };
    expect(await (await send(object, WATCHDOG_ROUTES.status, lockOfSameName)).json()).toMatchObject(
      { state: "unknown" },
    );
    const gone = await send(object, WATCHDOG_ROUTES.deregister, {
      ...hold,
      registration: register.registration,
    });
    expect(await gone.json()).toMatchObject({ state: "unknown", key, fencingToken: 1 });
  });

  it("renews a registration without a kind, and a row stored before kinds, as a lock's", async () => {
    const leaseMs = 600;
    const bed = watchdogBed(leaseMs, { heartbeatIntervalMs: 0 });
    // Lease mode: the client registers nothing; the messages below do, as older holders did.
    const unkinded = bed.client.lock("unkinded");
    const sent = await unkinded.acquire({ leaseMs });
    const { kind: _, ...withoutKind } = register;
    const key = `${bed.client.prefix}:{unkinded}`;
    const registered = await send(`lock:${key}`, WATCHDOG_ROUTES.register, {
      ...withoutKind,
      key,
      owner: sent.owner,
      fencingToken: sent.fencingToken,
      leaseMs,
    });
    expect(registered.status).toBe(200);

    // An object deployed before kinds left a row in its table, which had no kind column.
    const stored = bed.client.lock("stored");
    const old = await stored.acquire({ leaseMs });
    await runInDurableObject(objectOf(bed.client, "stored"), async (_object, state) => {
      state.storage.sql.exec(PRE_KIND_LEASES);
      const now = Date.now();
      state.storage.sql.exec(
        "INSERT INTO edgelock_watchdog_leases_v2 VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, 0, NULL, ?, 0)",
        `${bed.client.prefix}:{stored}`,
        old.owner,
        old.fencingToken,
        "00112233445566778899aabb",
        leaseMs,
        now,
        now + 60_000,
        now,
        now,
        now + 100,
      );
      await state.storage.setAlarm(now + 100);
    });

    // Three leases: both locks would have expired after the first without lock.extend.
    await sleepMs(3 * leaseMs);
    expect(await unkinded.isHeldBy(sent.owner)).toBe(true);
    expect(await stored.isHeldBy(old.owner)).toBe(true);
    for (const { name, owner, fencingToken } of [sent, old]) {
      const hold = { name, owner, fencingToken, prefix: bed.client.prefix };
      const status = await bed.watchdog.status(hold);
      expect(status).toMatchObject({ state: "renewing", fencingToken });
      expect(renewals(status)).toBeGreaterThanOrEqual(3);
      await bed.watchdog.forget(hold);
    }
  });

  it("a heartbeat or deregistration of one hold never touches another hold of the same owner", async () => {
    const object = "lock:edgelock:{protocol-holds}";
    const key = "edgelock:{protocol-holds}";
    const first = { ...register, key, fencingToken: 7, registration: "0000000000000000000a" };
    const later = { ...register, key, fencingToken: 8, registration: "0000000000000000000b" };
    type Status = { state: string; fencingToken: number | null; lastHeartbeatAt?: number };
    const call = async (path: string, body: unknown) =>
      (await (await send(object, path, body)).json()) as Status;
    const hold = (fencingToken: number | null) => ({
      v: WATCHDOG_PROTOCOL,
      key,
      owner: OWNER,
      fencingToken,
    });
    expect(await call(WATCHDOG_ROUTES.register, first)).toMatchObject({ fencingToken: 7 });
    expect(await call(WATCHDOG_ROUTES.register, later)).toMatchObject({ fencingToken: 8 });
    // Both holds of the owner are registered: the later did not replace the first.
    const stub = env.LOCK_WATCHDOG.get(env.LOCK_WATCHDOG.idFromName(object));
    expect(await (await stub.fetch(`https://watchdog${WATCHDOG_ROUTES.list}`)).json()).toHaveLength(
      2,
    );
    const laterBefore = await call(WATCHDOG_ROUTES.status, hold(8));
    await new Promise((resolve) => setTimeout(resolve, 20));
    // A heartbeat of the first hold is about it alone.
    const beat = await call(WATCHDOG_ROUTES.heartbeat, hold(7));
    expect(beat).toMatchObject({ state: "renewing", fencingToken: 7 });
    expect(beat.lastHeartbeatAt).toBeGreaterThan(laterBefore.lastHeartbeatAt!);
    expect(await call(WATCHDOG_ROUTES.status, hold(8))).toEqual(laterBefore);
    // No hold named: the owner's latest hold.
    expect(await call(WATCHDOG_ROUTES.status, hold(null))).toMatchObject({ fencingToken: 8 });
    // The first hold's release (its registration) leaves the later hold renewing.
    const released = await call(WATCHDOG_ROUTES.deregister, {
      ...hold(7),
      registration: first.registration,
    });
    expect(released).toMatchObject({ state: "unknown", fencingToken: 7 });
    expect(await call(WATCHDOG_ROUTES.status, hold(8))).toMatchObject({ state: "renewing" });
    // A deregistration naming the later hold with the first hold's registration removes nothing.
    expect(
      await call(WATCHDOG_ROUTES.deregister, { ...hold(8), registration: first.registration }),
    ).toMatchObject({ state: "renewing", fencingToken: 8 });
    // forget() of one hold records it as released; forget() with no hold named ends them all.
    expect(await call(WATCHDOG_ROUTES.register, first)).toMatchObject({ state: "renewing" });
    expect(
      await call(WATCHDOG_ROUTES.deregister, { ...hold(7), registration: null }),
    ).toMatchObject({ state: "ended", fencingToken: 7 });
    expect(await call(WATCHDOG_ROUTES.status, hold(8))).toMatchObject({ state: "renewing" });
    expect(
      await call(WATCHDOG_ROUTES.deregister, { ...hold(null), registration: null }),
    ).toMatchObject({ state: "ended", fencingToken: 8 });
    expect(await call(WATCHDOG_ROUTES.status, hold(7))).toMatchObject({ state: "ended" });
  });

  it("serves the host Worker's routes: a lock acquired in one request outlives it", async () => {
    const bed = watchdogBed(STEADY_TIMEOUT_MS, { heartbeatIntervalMs: 0 });
    const api = (path: string, method = "POST") =>
      handleLockApi(new Request(`http://w/locks/${path}`, { method }), bed.client, bed.watchdog);
    const acquired = await api("job/acquire?watchdog=durable-object");
    expect(acquired.status).toBe(200);
    const { owner } = (await acquired.json()) as { owner: string };
    await bed.watchdog.settled();
    await new Promise((resolve) => setTimeout(resolve, STEADY_TIMEOUT_MS + 1_000));
    expect(await (await api("job", "GET")).json()).toMatchObject({ locked: true });
    expect(await (await api(`job/heartbeat?owner=${owner}`)).json()).toMatchObject({
      state: "renewing",
    });
    const watched = (await (await api(`job/watchdog?owner=${owner}`, "GET")).json()) as {
      renewals: number;
    };
    expect(watched.renewals).toBeGreaterThanOrEqual(3);
    expect((await api(`job/release?owner=${owner}`)).status).toBe(204);
    await until(
      async () =>
        ((await (await api(`job/watchdog?owner=${owner}`, "GET")).json()) as { state: string })
          .state === "ended",
      3_000,
    );
    // Without the binding the route says so.
    const plain = await handleLockApi(
      new Request("http://w/locks/job/acquire?watchdog=durable-object", { method: "POST" }),
      bed.client,
    );
    expect(plain.status).toBe(400);
  });
});

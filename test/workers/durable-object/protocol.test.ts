/**
 * The watchdog's edges: options and lock references are checked before any request, the object
 * refuses malformed or foreign-version messages without storing anything, and the host Worker's
 * routes hold a lock across requests through the object.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  durableObjectWatchdog,
  WATCHDOG_PROTOCOL,
  WATCHDOG_ROUTES,
} from "../../../src/durable-object/index.js";
import { LockClient, LockInputError } from "../../../src/index.js";
import { handleLockApi } from "../../../worker/index.js";
import { countingNamespace, server, until, watchdogBed } from "./support.js";

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
  registration: "00112233445566778899aabb",
  leaseMs: 30_000,
  sinceConfirmedMs: 0,
  maxHoldMs: 60_000,
  heartbeatTimeoutMs: null,
};

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
      [{ ...register, v: 2 }, /protocol version 2/],
      [{ ...register, kind: "fair-lock" }, /kind must be "lock"/],
      [{ ...register, key: "edgelock:protocol" }, /lock key/],
      [{ ...register, owner: "me" }, /owner/],
      [{ ...register, leaseMs: 5 }, /leaseMs/],
      [{ ...register, registration: "Z" }, /registration/],
      [{ ...register, extra: 1 }, /unknown option "extra"/],
    ];
    for (const [body, message] of refusals) {
      const response = await send(object, WATCHDOG_ROUTES.register, body);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: string }).error).toMatch(message);
    }
    const heartbeat = await send(object, WATCHDOG_ROUTES.heartbeat, {
      v: 1,
      key: "x",
      owner: OWNER,
    });
    expect(heartbeat.status).toBe(400);
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
      v: 1,
      key,
      owner: OWNER,
      registration: "ffffffffffffffffffffffff",
    });
    expect(await stale.json()).toMatchObject({ state: "renewing" });
    const gone = await send(object, WATCHDOG_ROUTES.deregister, {
      v: 1,
      key,
      owner: OWNER,
      registration: register.registration,
    });
    expect(await gone.json()).toMatchObject({ state: "unknown" });
  });

  it("serves the host Worker's routes: a lock acquired in one request outlives it", async () => {
    const bed = watchdogBed(600, { heartbeatIntervalMs: 0 });
    const api = (path: string, method = "POST") =>
      handleLockApi(new Request(`http://w/locks/${path}`, { method }), bed.client, bed.watchdog);
    const acquired = await api("job/acquire?watchdog=durable-object");
    expect(acquired.status).toBe(200);
    const { owner } = (await acquired.json()) as { owner: string };
    await bed.watchdog.settled();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
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

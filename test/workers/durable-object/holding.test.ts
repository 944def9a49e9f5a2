/**
 * A lock in Durable Object watchdog mode lives on the object's alarms alone, costs one Durable
 * Object request on acquire and one on release (and no extra Redis request), and frees at once
 * when released. Real alarms, real Redis (through the local server), real time.
 */
import { describe, expect, it } from "vitest";
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

const TIMEOUT_MS = STEADY_TIMEOUT_MS;

describe(`Durable Object watchdog holding a lock on ${server.kind}`, () => {
  it("keeps the lock through several watchdogTimeoutMs with no timers in the holder", async () => {
    const bed = watchdogBed(TIMEOUT_MS, { heartbeatIntervalMs: 0 });
    const observer = plainClient(bed.client.prefix).lock("held");
    const held = await bed.client.lock("held").acquire();
    expect(held.renewing).toBe(true);
    await bed.watchdog.settled();
    expect(bed.namespace.calls).toEqual({ register: 1 });
    expect(bed.redisCalls()).toBe(1);

    // Three lease lengths: without renewal the lock would have expired after the first.
    const untilThird = Date.now() + 3 * TIMEOUT_MS;
    while (Date.now() < untilThird) {
      expect(await observer.isHeldBy(held.owner)).toBe(true);
      await sleepMs(100);
    }
    expect(held.signal.aborted, String(held.signal.reason)).toBe(false);
    // The holder sent nothing after acquiring: the object renewed.
    expect(bed.redisCalls()).toBe(1);
    expect(bed.namespace.calls).toEqual({ register: 1 });
    const status = await bed.watchdog.status(held);
    expect(status.state).toBe("renewing");
    expect(renewals(status)).toBeGreaterThanOrEqual(4);

    await held.release();
    await bed.watchdog.settled();
    expect(await observer.isLocked()).toBe(false);
    expect(bed.redisCalls()).toBe(2);
    expect(bed.namespace.calls).toEqual({ register: 1, status: 1, deregister: 1 });

    // The object forgot the lease and holds nothing, not even an alarm.
    expect(await objectLeft(bed.client, "held")).toEqual({ alarm: null, tables: 0 });

    // Nobody renews any more: the next holder's short lease runs out on its own.
    const next = await observer.acquire({ leaseMs: 200 });
    expect(next.fencingToken).toBe(held.fencingToken + 1);
    await until(async () => !(await observer.isLocked()), 3_000);
  });

  it("shares one registration between re-entrant holds and deregisters after the last", async () => {
    const bed = watchdogBed(TIMEOUT_MS, { heartbeatIntervalMs: 0 });
    const lock = bed.client.lock("nested");
    const outer = await lock.acquire();
    const inner = await lock.acquire({ owner: outer.owner });
    await bed.watchdog.settled();
    expect(bed.namespace.calls).toEqual({ register: 1 });
    await inner.release();
    await bed.watchdog.settled();
    expect(bed.namespace.calls).toEqual({ register: 1 });
    await sleepMs(TIMEOUT_MS + 300);
    expect(await lock.holdCount(outer.owner)).toBe(1);
    await outer.release();
    await bed.watchdog.settled();
    expect(bed.namespace.calls).toEqual({ register: 1, deregister: 1 });
    expect(await lock.isLocked()).toBe(false);
  });

  it("a heartbeat racing the registration does not end it", async () => {
    const bed = watchdogBed(TIMEOUT_MS, { heartbeatIntervalMs: 0 });
    const held = await bed.client.lock("racing").acquire();
    // Sent before the registration is confirmed: whatever it answers, it is not about this hold.
    await bed.watchdog.heartbeat(held);
    await bed.watchdog.settled();
    expect(held.signal.aborted, String(held.signal.reason)).toBe(false);
    expect(await bed.watchdog.heartbeat(held)).toMatchObject({ state: "renewing" });
    await held.release();
  });

  it("renews in process what the object cannot renew with lock.extend (a MultiLock)", async () => {
    const bed = watchdogBed(TIMEOUT_MS, { heartbeatIntervalMs: 0 });
    const a = bed.client.lock("multi-a");
    const b = bed.client.lock("multi-b");
    const held = await bed.client.multiLock([a, b]).acquire();
    await sleepMs(TIMEOUT_MS + 300);
    expect(held.signal.aborted, String(held.signal.reason)).toBe(false);
    expect(await a.isLocked()).toBe(true);
    expect(await b.isLocked()).toBe(true);
    expect(bed.namespace.total()).toBe(0);
    await held.release();
    expect(await a.isLocked()).toBe(false);
  });

  it("keeps a lock acquired in one invocation for another that releases it by owner", async () => {
    const first = watchdogBed(TIMEOUT_MS, { heartbeatIntervalMs: 0 });
    const held = await first.client.lock("handover").acquire();
    await first.watchdog.settled();
    const owner = held.owner;
    // The first invocation ends here (its handle is dropped, it never releases).
    await sleepMs(TIMEOUT_MS + 300);
    const second = watchdogBed(TIMEOUT_MS, { heartbeatIntervalMs: 0 }, first.client.prefix);
    const lock = second.client.lock("handover");
    expect(await lock.isHeldBy(owner)).toBe(true);
    await lock.release({ owner });
    expect(await lock.isLocked()).toBe(false);
    // With no watchdog call: the object's next renewal finds the lock released and stops.
    await until(
      async () =>
        (await second.watchdog.status({ name: "handover", owner, prefix: first.client.prefix }))
          .state === "ended",
      3_000,
    );
    const status = await second.watchdog.status({
      name: "handover",
      owner,
      prefix: first.client.prefix,
    });
    expect(status).toMatchObject({ state: "ended", reason: "gone" });
    expect(second.namespace.calls.register ?? 0).toBe(0);
  });
});

/**
 * Issue 28 in workerd: a registration with the LockWatchdog is one hold (its fencing token). A
 * watchdog-mode hold force-released, then the same owner (another task of the scope, another
 * invocation) takes the lock again: the old registration's renewals do not confirm the later
 * hold, so the old handle's signal aborts, and a later lease-mode hold whose holder crashed frees
 * at its own lease. Real alarms, real Redis, real time.
 */
import { describe, expect, it } from "vitest";
import { STEADY_TIMEOUT_MS, server, sleepMs, until, watchdogBed } from "./support.js";

const OWNER = "scope-owner-0123456789abcdef";

describe(`Durable Object watchdog hold identity on ${server.kind}`, () => {
  it("an ended hold's registration does not keep a later lease-mode hold of the same owner alive", async () => {
    // A 2 s lease renewed by the object every ~670 ms; automatic heartbeats every second.
    const bed = watchdogBed(STEADY_TIMEOUT_MS);
    const lock = bed.client.lock("identity");
    const ended = await lock.acquire({ owner: OWNER });
    await bed.watchdog.settled();
    await lock.forceRelease();
    const laterAt = Date.now();
    const later = await lock.acquire({ owner: OWNER, leaseMs: 1_000 });
    // Polled from the later acquisition on (never freed: Infinity).
    const freed = until(async () => !(await lock.isLocked()), 5_000).then(
      () => Date.now(),
      () => Number.POSITIVE_INFINITY,
    );
    expect(later.fencingToken).toBe(ended.fencingToken + 1);
    // The later hold, never released, frees at its own 1 s lease (plus polling slack), not kept
    // alive by the old registration.
    expect((await freed) - laterAt).toBeLessThan(1_000 + 1_000);
    // The object's next renewal names the ended hold and finds it gone; the next heartbeat says so.
    await until(() => ended.signal.aborted, 4_000);
    expect(String(ended.signal.reason)).toContain("(gone)");
  });

  it("a later watchdog-mode hold of the same owner keeps its own registration", async () => {
    const bed = watchdogBed(STEADY_TIMEOUT_MS);
    const lock = bed.client.lock("identity-renewed");
    const ended = await lock.acquire({ owner: OWNER });
    await bed.watchdog.settled();
    await lock.forceRelease();
    const later = await lock.acquire({ owner: OWNER });
    await bed.watchdog.settled();
    await until(() => ended.signal.aborted, 4_000);
    // Past the later hold's first lease: only the object's renewals keep it.
    await sleepMs(3_000);
    expect(later.signal.aborted, String(later.signal.reason)).toBe(false);
    expect(await lock.isHeldBy(OWNER)).toBe(true);
    expect(await bed.watchdog.status(later)).toMatchObject({
      state: "renewing",
      fencingToken: later.fencingToken,
    });
    expect(await bed.watchdog.status(ended)).toMatchObject({
      state: "ended",
      reason: "gone",
      fencingToken: ended.fencingToken,
    });
    await later.release();
    await bed.watchdog.settled();
    expect(await lock.isLocked()).toBe(false);
  });
});

/**
 * The object stops renewing — so a crashed or runaway holder cannot keep a lock forever — when
 * heartbeats stop, when maxHoldMs passes, and when the renew script finds the lock gone; and the
 * holder hears of it (its signal aborts). Real alarms, real Redis, real time.
 */
import { describe, expect, it } from "vitest";
import { type LockEvent, LockLostError } from "../../../src/index.js";
import {
  plainClient,
  renewals,
  STEADY_TIMEOUT_MS,
  server,
  sleepMs,
  until,
  watchdogBed,
} from "./support.js";

const TIMEOUT_MS = STEADY_TIMEOUT_MS;

describe(`Durable Object watchdog ending renewal on ${server.kind}`, () => {
  it("frees the lock of a holder whose heartbeats stopped within heartbeatTimeoutMs + watchdogTimeoutMs", async () => {
    const heartbeatTimeoutMs = 1_200;
    const watchdogTimeoutMs = TIMEOUT_MS;
    const bed = watchdogBed(watchdogTimeoutMs, {
      heartbeatTimeoutMs,
      heartbeatIntervalMs: 0,
      maxHoldMs: 120_000,
    });
    const held = await bed.client.lock("crash").acquire();
    // Alive for a while: heartbeats (manual here) keep the lease beyond the heartbeat timeout.
    let lastHeartbeatAt = 0;
    for (let beat = 0; beat < 5; beat++) {
      await sleepMs(400);
      const status = await bed.watchdog.heartbeat(held);
      expect(status.state).toBe("renewing");
      if (status.state === "renewing") lastHeartbeatAt = status.lastHeartbeatAt;
    }
    // Then the holder "crashes": no heartbeat, no release. Another owner waits for the lock.
    const other = plainClient(bed.client.prefix).lock("crash");
    const next = await other.acquire({ leaseMs: 5_000, waitMs: 20_000 });
    const freedAt = Date.now();
    expect(next.fencingToken).toBe(held.fencingToken + 1);
    // Held through the heartbeat window, freed within the documented bound (plus polling slack).
    expect(freedAt).toBeGreaterThanOrEqual(lastHeartbeatAt + heartbeatTimeoutMs);
    expect(freedAt).toBeLessThanOrEqual(
      lastHeartbeatAt + heartbeatTimeoutMs + watchdogTimeoutMs + 750,
    );
    expect(await bed.watchdog.status(held)).toMatchObject({
      state: "ended",
      reason: "heartbeat-timeout",
    });
    await next.release();
  });

  it("keeps the lock while automatic heartbeats flow from the living holder", async () => {
    const bed = watchdogBed(TIMEOUT_MS, { heartbeatTimeoutMs: 900 });
    expect(bed.watchdog.options.heartbeatIntervalMs).toBe(300);
    const held = await bed.client.lock("alive").acquire();
    // Well past the heartbeat timeout and two leases: only the heartbeats kept renewal going.
    await sleepMs(2 * TIMEOUT_MS + 300);
    expect(held.signal.aborted, String(held.signal.reason)).toBe(false);
    expect(await bed.client.lock("alive").isHeldBy(held.owner)).toBe(true);
    expect(bed.namespace.calls.heartbeat).toBeGreaterThanOrEqual(4);
    await held.release();
    await bed.watchdog.settled();
    expect(await bed.client.lock("alive").isLocked()).toBe(false);
  });

  it("stops renewing when maxHoldMs has passed and aborts the holder's signal", async () => {
    const maxHoldMs = 3_000;
    const bed = watchdogBed(TIMEOUT_MS, { maxHoldMs, heartbeatIntervalMs: 150 });
    const lost: LockEvent[] = [];
    bed.client.on("lockLost", (event) => lost.push(event));
    const started = Date.now();
    const held = await bed.client.lock("capped").acquire();
    const other = plainClient(bed.client.prefix).lock("capped");
    const next = await other.acquire({ leaseMs: 5_000, waitMs: 20_000 });
    const freedAfter = Date.now() - started;
    expect(freedAfter).toBeGreaterThanOrEqual(maxHoldMs);
    expect(freedAfter).toBeLessThanOrEqual(maxHoldMs + TIMEOUT_MS + 750);
    await until(() => held.signal.aborted, 3_000);
    expect(held.signal.reason).toBeInstanceOf(LockLostError);
    expect(String(held.signal.reason)).toContain("max-hold");
    expect(lost).toHaveLength(1);
    expect(await bed.watchdog.status(held)).toMatchObject({ state: "ended", reason: "max-hold" });
    await next.release();
  });

  it("ends renewal when the renew script finds the lock gone, and aborts every re-entrant hold", async () => {
    const bed = watchdogBed(TIMEOUT_MS, { heartbeatIntervalMs: 150 });
    const lost: LockEvent[] = [];
    bed.client.on("lockLost", (event) => lost.push(event));
    const lock = bed.client.lock("stolen");
    const held = await lock.acquire();
    const nested = await lock.acquire({ owner: held.owner });
    await sleepMs(TIMEOUT_MS / 2 + 100);
    expect(renewals(await bed.watchdog.status(held))).toBeGreaterThanOrEqual(1);
    await lock.forceRelease();
    await until(() => held.signal.aborted, 3_000);
    expect(nested.signal.aborted).toBe(true);
    expect(held.signal.reason).toBeInstanceOf(LockLostError);
    expect(String(held.signal.reason)).toContain("(gone)");
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ type: "lockLost", name: "stolen", owner: held.owner });
    const status = await bed.watchdog.status(held);
    expect(status).toMatchObject({ state: "ended", reason: "gone" });
    // Renewal ended for good: a new holder with a short lease is not kept alive.
    const next = await lock.acquire({ leaseMs: 200 });
    await until(async () => !(await lock.isLocked()), 3_000);
    await until(() => next.signal.aborted, 1_000);
  });

  it("tells a holder without automatic heartbeats at its next manual heartbeat", async () => {
    const bed = watchdogBed(TIMEOUT_MS, { heartbeatIntervalMs: 0 });
    const lock = bed.client.lock("asked");
    const held = await lock.acquire();
    await bed.watchdog.settled();
    await lock.forceRelease();
    await until(async () => (await bed.watchdog.status(held)).state === "ended", 3_000);
    // status() learnt it too; the signal aborts as soon as the holder hears of it.
    expect(held.signal.aborted).toBe(true);
    expect(await bed.watchdog.heartbeat(held)).toMatchObject({ state: "ended", reason: "gone" });
  });

  it("forget() from another invocation stops renewal and records it as released", async () => {
    const bed = watchdogBed(TIMEOUT_MS, { heartbeatIntervalMs: 0 });
    const held = await bed.client.lock("forgotten").acquire();
    await bed.watchdog.settled();
    const elsewhere = watchdogBed(TIMEOUT_MS, { heartbeatIntervalMs: 0 }, bed.client.prefix);
    const ref = { name: "forgotten", owner: held.owner, prefix: bed.client.prefix };
    expect(await elsewhere.watchdog.forget(ref)).toMatchObject({
      state: "ended",
      reason: "released",
    });
    // Not renewed any more: the watchdog-mode lease (TIMEOUT_MS) runs out.
    await until(async () => !(await bed.client.lock("forgotten").isLocked()), TIMEOUT_MS + 3_000);
    expect(await bed.watchdog.heartbeat(held)).toMatchObject({ reason: "released" });
    expect(held.signal.aborted).toBe(true);
  });
});

import { describe, expect, it } from "vitest";
import { type LockEvent, LockLostError, LockNotHeldError } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sleepMs, until, useTestBed } from "./testbed.js";

describe.each(backendKindsUnderTest())("leases and the watchdog on %s", (kind) => {
  const bed = useTestBed(kind);

  it("lets a lease expire, frees the lock, and aborts the handle's signal", async () => {
    const client = bed.client();
    const held = await client.lock("lease").acquire({ leaseMs: 200 });
    expect(held.renewing).toBe(false);
    await until(() => held.signal.aborted, 2_000);
    expect(held.signal.reason).toBeInstanceOf(LockLostError);
    await until(async () => !(await client.lock("lease").isLocked()), 2_000);
    const next = await client.lock("lease").tryAcquire({ leaseMs: 1_000 });
    expect(next?.fencingToken).toBe(held.fencingToken + 1);
    await expect(held.release()).rejects.toBeInstanceOf(LockNotHeldError);
    await next?.release();
  });

  it("a hold whose answer came after its lease ends is lost when acquire returns, not later", async () => {
    const client = bed.client();
    bed.server.faults.configure({ latencyMs: 300, commands: ["eval", "evalsha"] });
    try {
      const held = await client.lock("slow-answer").acquire({ leaseMs: 100 });
      expect(held.expiresAt).toBeLessThanOrEqual(Date.now());
      expect(held.signal.aborted).toBe(true);
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
    } finally {
      bed.server.faults.disable();
    }
  });

  it("keeps a lock in watchdog mode past several timeouts, and stops after release", async () => {
    const client = bed.client({ watchdogTimeoutMs: 300 });
    const lock = client.lock("watched");
    const held = await lock.acquire();
    expect(held.renewing).toBe(true);
    expect(held.leaseMs).toBe(300);
    await sleepMs(1_200);
    expect(held.signal.aborted).toBe(false);
    expect(await lock.isHeldBy(held.owner)).toBe(true);
    await held.release();
    expect(await lock.isLocked()).toBe(false);
    // No renewal after release: a new holder with a short lease is not kept alive by anyone.
    const lease = await lock.acquire({ leaseMs: 200 });
    await until(async () => !(await lock.isLocked()), 2_000);
    await until(() => lease.signal.aborted, 1_000);
  });

  it("renews once per third of the timeout, one request each", async () => {
    const client = bed.client({ watchdogTimeoutMs: 600 });
    const held = await client.lock("rhythm").acquire();
    const before = bed.requests();
    await sleepMs(1_000); // renewals near 200, 400, 600, 800 and 1000 ms
    const renewals = bed.requests() - before;
    expect(renewals).toBeGreaterThanOrEqual(3);
    expect(renewals).toBeLessThanOrEqual(6);
    await held.release();
  });

  it("aborts the signal and emits lockLost when the renewal finds the lock gone", async () => {
    const client = bed.client({ watchdogTimeoutMs: 300 });
    const events: LockEvent[] = [];
    client.on("lockLost", (event) => events.push(event));
    const lock = client.lock("stolen");
    const held = await lock.acquire();
    const nested = await lock.acquire({ owner: held.owner });
    await lock.forceRelease();
    await until(() => held.signal.aborted, 2_000);
    expect(nested.signal.aborted).toBe(true);
    expect(held.signal.reason).toBeInstanceOf(LockLostError);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: "lockLost", name: "stolen", owner: held.owner });
    await expect(held.release()).rejects.toBeInstanceOf(LockNotHeldError);
  });

  it("frees the lock of a holder that stopped renewing (crashed) within watchdogTimeoutMs", async () => {
    // A renewer that never renews: as if the holder's process died right after acquiring.
    const crashed = bed.client({
      watchdogTimeoutMs: 400,
      watchdog: { start: () => ({ stop() {} }) },
    });
    const lock = crashed.lock("crashed");
    const held = await lock.acquire();
    const survivor = bed.client({ prefix: crashed.prefix });
    const started = Date.now();
    const next = await survivor.lock("crashed").acquire({ leaseMs: 1_000, waitMs: 5_000 });
    const freedAfter = Date.now() - started;
    expect(freedAfter).toBeLessThan(1_500);
    expect(next.fencingToken).toBe(held.fencingToken + 1);
    await next.release();
  });

  it("extend() re-arms the lease timer of the handle", async () => {
    const held = await bed.client().lock("timer").acquire({ leaseMs: 300 });
    await sleepMs(150);
    await held.extend(1_000);
    await sleepMs(300);
    expect(held.signal.aborted).toBe(false);
    await held.release();
  });
});

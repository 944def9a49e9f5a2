/**
 * Alarm delivery as Cloudflare describes it — at least once, retried after a throw (up to six
 * times, then dropped), possibly late — driven by hand: the test takes the object's alarm away
 * and calls `alarm({ retryCount, isRetry })` itself inside the object (runDurableObjectAlarm never
 * passes retry information).
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { LockWatchdog } from "../../../src/durable-object/index.js";
import type { LockHandle } from "../../../src/index.js";
import {
  objectLeft,
  objectOf,
  plainClient,
  renewals,
  STEADY_TIMEOUT_MS,
  server,
  sleepMs,
  until,
  type WatchdogBed,
  watchdogBed,
} from "./support.js";

/** Requests that reached the Redis server from this isolate (the object runs in it too). */
function countServerRequests(): { count(): number; restore(): void } {
  let count = 0;
  const original = globalThis.fetch;
  globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input);
    if (url.startsWith(server.url)) count += 1;
    return original(input, init);
  }) as typeof fetch;
  return {
    count: () => count,
    restore: () => {
      globalThis.fetch = original;
    },
  };
}

/** Acquires `name` with a 3 s lease and takes the object's alarm away from the runtime. */
async function heldWithoutAlarm(name: string): Promise<{ bed: WatchdogBed; held: LockHandle }> {
  const bed = watchdogBed(3_000, { heartbeatIntervalMs: 0 });
  const held = await bed.client.lock(name).acquire();
  await bed.watchdog.settled();
  await runInDurableObject(objectOf(bed.client, name), (_: LockWatchdog, state) =>
    state.storage.deleteAlarm(),
  );
  return { bed, held };
}

/** Runs the object's alarm handler as the runtime would; returns the alarm armed afterwards. */
function runAlarm(
  bed: WatchdogBed,
  name: string,
  info: { retryCount: number; isRetry: boolean },
): Promise<number | null> {
  return runInDurableObject(objectOf(bed.client, name), async (instance: LockWatchdog, state) => {
    await state.storage.deleteAlarm(); // as during a real invocation: none armed
    await instance.alarm({ ...info, scheduledTime: Date.now() - 50 });
    return state.storage.getAlarm();
  });
}

describe(`LockWatchdog alarm delivery on ${server.kind}`, () => {
  it("a retried invocation renews what is due once, and re-arms for the next third of the lease", async () => {
    const { bed, held } = await heldWithoutAlarm("retried");
    await sleepMs(1_100); // the first renewal (at a third of 3 s) is now due
    const requests = countServerRequests();
    try {
      const armed = await runAlarm(bed, "retried", { retryCount: 3, isRetry: true });
      expect(requests.count()).toBe(1);
      expect(renewals(await bed.watchdog.status(held))).toBe(1);
      expect(armed).not.toBeNull();
      expect(armed! - Date.now()).toBeGreaterThan(500);
      expect(armed! - Date.now()).toBeLessThanOrEqual(1_000);
      const ttl = await plainClient(bed.client.prefix).lock("retried").remainingTtl();
      expect(ttl).toBeGreaterThan(2_500);
    } finally {
      requests.restore();
    }
    await held.release();
  });

  it("a duplicate invocation renews nothing twice and leaves the next alarm armed", async () => {
    const { bed, held } = await heldWithoutAlarm("duplicate");
    await sleepMs(1_100);
    const requests = countServerRequests();
    try {
      await runAlarm(bed, "duplicate", { retryCount: 0, isRetry: false });
      const armed = await runAlarm(bed, "duplicate", { retryCount: 0, isRetry: false });
      const again = await runAlarm(bed, "duplicate", { retryCount: 1, isRetry: true });
      expect(requests.count()).toBe(1);
      expect(renewals(await bed.watchdog.status(held))).toBe(1);
      expect(armed).not.toBeNull();
      expect(again).toBe(armed);
    } finally {
      requests.restore();
    }
    expect(await bed.client.lock("duplicate").isHeldBy(held.owner)).toBe(true);
    await held.release();
  });

  it("two deliveries of one alarm at once send one renewal", async () => {
    const { bed, held } = await heldWithoutAlarm("concurrent");
    await sleepMs(1_100);
    const requests = countServerRequests();
    try {
      await runInDurableObject(objectOf(bed.client, "concurrent"), (instance: LockWatchdog) =>
        Promise.all([
          instance.alarm({ retryCount: 0, isRetry: false }),
          instance.alarm({ retryCount: 1, isRetry: true }),
        ]),
      );
      expect(requests.count()).toBe(1);
      expect(renewals(await bed.watchdog.status(held))).toBe(1);
    } finally {
      requests.restore();
    }
    expect(await bed.client.lock("concurrent").isHeldBy(held.owner)).toBe(true);
    await held.release();
  });

  it("a handler that throws still leaves the next alarm armed, and renewal goes on", async () => {
    const { bed, held } = await heldWithoutAlarm("throws");
    await sleepMs(1_100);
    const armed = await runInDurableObject(
      objectOf(bed.client, "throws"),
      async (instance: LockWatchdog, state) => {
        const spy = vi
          .spyOn(instance as unknown as { renewDue(now: number): Promise<void> }, "renewDue")
          .mockRejectedValueOnce(new Error("storage hiccup"));
        await expect(instance.alarm({ retryCount: 5, isRetry: true })).rejects.toThrow(
          "storage hiccup",
        );
        spy.mockRestore();
        return state.storage.getAlarm();
      },
    );
    // Armed soon (a short back-off, not the runtime's retry or nothing after the last retry).
    expect(armed).not.toBeNull();
    expect(armed! - Date.now()).toBeLessThanOrEqual(300);
    expect(renewals(await bed.watchdog.status(held))).toBe(0);
    // The real alarm then fires and renews.
    await until(async () => renewals(await bed.watchdog.status(held)) >= 1, 3_000);
    expect(await bed.client.lock("throws").isHeldBy(held.owner)).toBe(true);
    await held.release();
  });

  it("a renewal between the holder's release and its deregistration leaves nothing behind", async () => {
    const { bed, held } = await heldWithoutAlarm("released-mid-renewal");
    await sleepMs(1_100);
    // The release reaches Redis; its deregistration is still on the way to the object.
    const deregistration = bed.namespace.pause("deregister");
    await held.release();
    await runAlarm(bed, "released-mid-renewal", { retryCount: 0, isRetry: false });
    // The renewal found the released hold gone and recorded it.
    expect(await bed.watchdog.status(held)).toMatchObject({ state: "ended", reason: "gone" });

    deregistration.resume();
    await bed.watchdog.settled();
    expect(bed.namespace.calls).toMatchObject({ register: 1, deregister: 1 });
    // It was the holder's release: the object forgets the hold and keeps nothing, no alarm.
    expect(await bed.watchdog.status(held)).toMatchObject({ state: "unknown" });
    expect(await objectLeft(bed.client, "released-mid-renewal")).toEqual({
      alarm: null,
      tables: 0,
    });
  });

  it("a very late alarm never revives a lock whose lease already ran out", async () => {
    const bed = watchdogBed(STEADY_TIMEOUT_MS, { heartbeatIntervalMs: 0 });
    const held = await bed.client.lock("late").acquire();
    await bed.watchdog.settled();
    await runInDurableObject(objectOf(bed.client, "late"), (_: LockWatchdog, state) =>
      state.storage.deleteAlarm(),
    );
    // The object is "down" for longer than the lease: the lock expires in Redis.
    await until(async () => !(await bed.client.lock("late").isLocked()), STEADY_TIMEOUT_MS + 3_000);
    await runAlarm(bed, "late", { retryCount: 0, isRetry: false });
    expect(await bed.watchdog.status(held)).toMatchObject({ state: "ended", reason: "gone" });
    expect(await bed.client.lock("late").isLocked()).toBe(false);
  });
});

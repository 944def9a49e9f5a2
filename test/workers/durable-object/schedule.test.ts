/** The watchdog's timing rules, as pure functions (the other files test them in the object). */
import { describe, expect, it } from "vitest";
import {
  afterThrowDelayMs,
  claimedUntil,
  firstRenewalAt,
  limitReached,
  renewalIntervalMs,
  retryDelayMs,
} from "../../../src/durable-object/schedule.js";

describe("watchdog schedule", () => {
  it("renews at a third of the lease, sooner when the lease was set a while ago", () => {
    expect(renewalIntervalMs(30_000)).toBe(10_000);
    expect(firstRenewalAt(1_000, 30_000, 0)).toBe(11_000);
    expect(firstRenewalAt(1_000, 30_000, 4_000)).toBe(7_000);
    expect(firstRenewalAt(1_000, 30_000, 60_000)).toBe(1_000);
  });

  it("retries a failed renewal several times within the lease, and claims beyond the early window", () => {
    expect(retryDelayMs(30_000)).toBe(2_000);
    expect(retryDelayMs(300)).toBe(50);
    // Claimed leases are not due again within a sixth of the lease (the early window).
    expect(claimedUntil(0, 30_000) - 30_000 / 6).toBeGreaterThan(0);
  });

  it("backs off after throwing handlers, up to a minute", () => {
    expect([1, 2, 3].map(afterThrowDelayMs)).toEqual([250, 500, 1_000]);
    expect(afterThrowDelayMs(40)).toBe(60_000);
  });

  it("stops at maxHoldMs and after a heartbeat timeout, not before", () => {
    const lease = { holdUntil: 10_000, heartbeatTimeoutMs: 600, lastHeartbeatAt: 5_000 };
    expect(limitReached(lease, 5_599)).toBeNull();
    expect(limitReached(lease, 5_600)?.reason).toBe("heartbeat-timeout");
    expect(limitReached({ ...lease, heartbeatTimeoutMs: null }, 9_999)).toBeNull();
    expect(limitReached({ ...lease, heartbeatTimeoutMs: null }, 10_000)?.reason).toBe("max-hold");
  });
});

/**
 * When the watchdog renews and when it stops, as pure functions of a lease and the clock.
 *
 * Alarms may run late (up to a minute on failover) and are retried, so renewal happens at a third
 * of the lease: one up to two thirds late still finds the lock held.
 */
import type { EndReason } from "./messages.js";

/** After an alarm handler threw, the next alarm waits this, doubling per throw up to a minute. */
export const AFTER_THROW_MS = 250;

/** The delay before the next alarm after `throws` consecutive throwing handlers. */
export function afterThrowDelayMs(throws: number): number {
  return Math.min(60_000, AFTER_THROW_MS * 2 ** Math.max(0, throws - 1));
}

/** Renewal stops this long after registration unless the holder chose otherwise: 15 minutes. */
export const DEFAULT_MAX_HOLD_MS = 15 * 60_000;

/** How long the object remembers why it stopped renewing, so that the holder can ask: 1 hour. */
export const ENDING_RETENTION_MS = 60 * 60_000;

/** Renew when this fraction of the lease has passed (Redisson's rhythm). */
const RENEW_AT_FRACTION = 1 / 3;

/** Time between two successful renewals of a lease. */
export function renewalIntervalMs(leaseMs: number): number {
  return Math.max(1, Math.floor(leaseMs * RENEW_AT_FRACTION));
}

/**
 * An alarm also renews leases due within a sixth of the lease: harmless, and it brings one
 * object's leases into the same rounds (one alarm, one pipelined Redis request) within a round.
 */
export const EARLY_RENEWAL_DIVISOR = 6;

/** After a failed renewal, try again sooner: several times before the lease could run out. */
export function retryDelayMs(leaseMs: number): number {
  return Math.max(50, Math.min(renewalIntervalMs(leaseMs), Math.floor(leaseMs / 15)));
}

/**
 * While a renewal is in flight its lease is rescheduled to this, so that a duplicate alarm does
 * not send it again (even with the early window), and a handler that died mid-way retries it.
 */
export function claimedUntil(now: number, leaseMs: number): number {
  return now + retryDelayMs(leaseMs) + Math.floor(leaseMs / EARLY_RENEWAL_DIVISOR);
}

/** The first renewal of a lease that was set `sinceConfirmedMs` before it was registered. */
export function firstRenewalAt(now: number, leaseMs: number, sinceConfirmedMs: number): number {
  return now + Math.max(0, renewalIntervalMs(leaseMs) - sinceConfirmedMs);
}

/** The parts of a registration that decide whether it may still be renewed. */
export interface RenewalLimits {
  readonly holdUntil: number;
  readonly heartbeatTimeoutMs: number | null;
  readonly lastHeartbeatAt: number;
}

/**
 * The moment renewal must stop by (maxHoldMs, or the heartbeat timeout after the last
 * heartbeat): no renew request may be sent from then on, re-sends included, so a lease a
 * renewal re-arms ends within one lease of it.
 */
export function renewalDeadline(lease: RenewalLimits): number {
  const heartbeatDeadline =
    lease.heartbeatTimeoutMs === null
      ? Number.POSITIVE_INFINITY
      : lease.lastHeartbeatAt + lease.heartbeatTimeoutMs;
  return Math.min(lease.holdUntil, heartbeatDeadline);
}

/** Why renewal must stop at `now`, or null while it may go on. */
export function limitReached(
  lease: RenewalLimits,
  now: number,
): { reason: EndReason; detail: string } | null {
  if (now >= lease.holdUntil) {
    return { reason: "max-hold", detail: "maxHoldMs passed since the lock was registered" };
  }
  if (
    lease.heartbeatTimeoutMs !== null &&
    now - lease.lastHeartbeatAt >= lease.heartbeatTimeoutMs
  ) {
    return {
      reason: "heartbeat-timeout",
      detail: `no heartbeat for ${now - lease.lastHeartbeatAt} ms (heartbeatTimeoutMs ${lease.heartbeatTimeoutMs})`,
    };
  }
  return null;
}

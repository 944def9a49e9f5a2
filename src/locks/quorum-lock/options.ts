import { QUORUM_DEFAULTS } from "../../defaults.js";
import { LockInputError } from "../../errors.js";
import { checkCount, checkDuration, checkOptions, orDefault } from "../../validate.js";

/** Options of `new RedLock(clients, options)`: the clock-drift model and the per-database request limits. */
export interface RedLockOptions {
  /**
   * Clock drift allowed between this client and each database, as a fraction of the lease, from
   * 0 to 0.5. A hold is trusted for `lease − elapsed − drift`, `drift = ceil(lease ×
   * driftFactor) + driftMs`: a database's clock may run this much faster than the client's.
   * @default 0.01
   */
  driftFactor?: number;
  /**
   * Fixed part of the drift, in ms: Redis expires keys with 1 ms precision and the client rounds.
   * @default 2
   */
  driftMs?: number;
  /**
   * How long one attempt waits for the databases, in ms; those silent by then count as
   * unreachable and what they may have granted is rolled back. Never past the validity of the
   * hold it would get.
   * @default 1000
   */
  responseTimeoutMs?: number;
  /**
   * Requests one attempt keeps in flight at once: a Workers invocation has at most six open
   * connections; more would queue unseen and eat validity.
   * @default 6
   */
  maxConcurrentRequests?: number;
}

export interface RedLockSettings {
  readonly databases: number;
  /** floor(databases / 2) + 1 */
  readonly quorum: number;
  readonly driftFactor: number;
  readonly driftMs: number;
  readonly responseTimeoutMs: number;
  readonly maxConcurrentRequests: number;
}

/** Three or five is the usual choice. */
export const MAX_REDLOCK_DATABASES = 16;

const OPTION_KEYS = [
  "driftFactor",
  "driftMs",
  "responseTimeoutMs",
  "maxConcurrentRequests",
] as const;

export function quorumOf(databases: number): number {
  return Math.floor(databases / 2) + 1;
}

export function resolveRedLockSettings(options: unknown, databases: number): RedLockSettings {
  const given = checkOptions<RedLockOptions>(options, "RedLock options", OPTION_KEYS);
  const driftFactor = given.driftFactor ?? QUORUM_DEFAULTS.driftFactor;
  if (typeof driftFactor !== "number" || !(driftFactor >= 0 && driftFactor <= 0.5)) {
    throw new LockInputError(
      `driftFactor must be a number from 0 to 0.5, got ${String(driftFactor)}.`,
    );
  }
  return {
    databases,
    quorum: quorumOf(databases),
    driftFactor,
    driftMs: orDefault(given.driftMs, QUORUM_DEFAULTS.driftMs, (ms) =>
      checkDuration(ms, "driftMs", { min: 0 }),
    ),
    responseTimeoutMs: orDefault(given.responseTimeoutMs, QUORUM_DEFAULTS.responseTimeoutMs, (ms) =>
      checkDuration(ms, "responseTimeoutMs", { min: 1 }),
    ),
    maxConcurrentRequests: orDefault(
      given.maxConcurrentRequests,
      QUORUM_DEFAULTS.maxConcurrentRequests,
      (n) => checkCount(n, "maxConcurrentRequests", 1, MAX_REDLOCK_DATABASES),
    ),
  };
}

export function driftFor(leaseMs: number, settings: RedLockSettings): number {
  return Math.ceil(leaseMs * settings.driftFactor) + settings.driftMs;
}

/** Client clock; `startedAt` taken before the first request left: lease − elapsed − drift. */
export function validUntil(startedAt: number, leaseMs: number, settings: RedLockSettings): number {
  return startedAt + leaseMs - driftFor(leaseMs, settings);
}

/**
 * Until enough busy databases free up for a majority: the `needed`-th shortest lease left (null
 * when unknown or when no wait can help).
 */
export function ttlUntilQuorum(
  busyTtls: readonly (number | null)[],
  needed: number,
): number | null {
  if (needed <= 0 || busyTtls.includes(null)) return null;
  const sorted = (busyTtls as number[]).slice().sort((a, b) => a - b);
  return sorted[needed - 1] ?? null;
}

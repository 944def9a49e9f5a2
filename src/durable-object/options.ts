/** Options of `durableObjectWatchdog()`, with their defaults, checked before any request. */
import { LockInputError } from "../errors.js";
import { checkDuration, checkLease, checkOptions, checkPrefix } from "../validate.js";
import type { WatchdogNamespace } from "./platform.js";
import { DEFAULT_MAX_HOLD_MS } from "./schedule.js";
import type { ShardBy } from "./shard.js";

/** Options of `durableObjectWatchdog()`, each with its default. */
export interface DurableObjectWatchdogOptions {
  /**
   * The longest the object renews one registration, in ms, however long the holder lives: a
   * holder that never releases (crashed, forgot) keeps the lock at most `maxHoldMs` +
   * `watchdogTimeoutMs`.
   * @default 900_000 (15 minutes)
   */
  maxHoldMs?: number;
  /**
   * Require heartbeats: the object stops renewing a lease that heard none for this long, in ms,
   * so a crashed holder frees the lock within this + `watchdogTimeoutMs` of its last heartbeat.
   * Heartbeats come from the acquiring isolate (`heartbeatIntervalMs`) and `watchdog.heartbeat()`.
   * @default null (no heartbeats required; the bound is then `maxHoldMs`)
   */
  heartbeatTimeoutMs?: number | null;
  /**
   * Automatic heartbeats from the acquiring isolate, in ms: each is one Durable Object request
   * whose answer aborts the handle's `signal` when the lock is lost. 0: none (no timers).
   * @default a third of `heartbeatTimeoutMs` when set, else `watchdogTimeoutMs`
   */
  heartbeatIntervalMs?: number;
  /**
   * One object per lock key (`"lock"`) or per owner token (`"owner"`).
   * @default "lock"
   */
  shardBy?: ShardBy;
  /**
   * Key prefix assumed by `heartbeat()`, `status()` and `forget()` for a lock given without
   * `prefix` and not held in this isolate; use your LockClient's.
   * @default "edgelock"
   */
  prefix?: string;
  /**
   * The longest one call to the object may take, in ms (100 to 60000), then LockBackendError. A
   * registration unanswered before the hold's lease passes ends the hold as lost.
   * @default 2000
   */
  requestTimeoutMs?: number;
}

/** The default of `requestTimeoutMs`: a LockClient's `backendTimeoutMs`. */
export const DEFAULT_WATCHDOG_REQUEST_TIMEOUT_MS = 2_000;

export interface ResolvedWatchdogOptions {
  readonly maxHoldMs: number;
  readonly heartbeatTimeoutMs: number | null;
  /** undefined: the default, which depends on the lease. */
  readonly heartbeatIntervalMs: number | undefined;
  readonly shardBy: ShardBy;
  readonly prefix: string;
  readonly requestTimeoutMs: number;
}

const KEYS = [
  "maxHoldMs",
  "heartbeatTimeoutMs",
  "heartbeatIntervalMs",
  "shardBy",
  "prefix",
  "requestTimeoutMs",
] as const;

export function checkNamespace(value: unknown): WatchdogNamespace {
  const candidate = value as Partial<Record<keyof WatchdogNamespace, unknown>> | null | undefined;
  if (
    candidate === null ||
    typeof candidate !== "object" ||
    typeof candidate.idFromName !== "function" ||
    typeof candidate.get !== "function"
  ) {
    throw new LockInputError(
      "durableObjectWatchdog(namespace) needs the LockWatchdog Durable Object binding, e.g. env.LOCK_WATCHDOG (see wrangler.toml).",
    );
  }
  return candidate as WatchdogNamespace;
}

export function resolveWatchdogOptions(options: unknown): ResolvedWatchdogOptions {
  const given = checkOptions<DurableObjectWatchdogOptions>(options, "watchdog options", KEYS);
  if (given.shardBy !== undefined && given.shardBy !== "lock" && given.shardBy !== "owner") {
    throw new LockInputError(`shardBy must be "lock" or "owner", got ${String(given.shardBy)}.`);
  }
  const heartbeatTimeoutMs =
    given.heartbeatTimeoutMs === undefined || given.heartbeatTimeoutMs === null
      ? null
      : checkLease(given.heartbeatTimeoutMs, "heartbeatTimeoutMs");
  const heartbeatIntervalMs =
    given.heartbeatIntervalMs === undefined
      ? heartbeatTimeoutMs === null
        ? undefined
        : Math.max(1, Math.floor(heartbeatTimeoutMs / 3))
      : checkDuration(given.heartbeatIntervalMs, "heartbeatIntervalMs", { min: 0 });
  if (
    heartbeatTimeoutMs !== null &&
    heartbeatIntervalMs !== undefined &&
    heartbeatIntervalMs >= heartbeatTimeoutMs
  ) {
    throw new LockInputError(
      `heartbeatIntervalMs (${heartbeatIntervalMs}) must be shorter than heartbeatTimeoutMs (${heartbeatTimeoutMs}), or 0 for manual heartbeats only.`,
    );
  }
  return {
    maxHoldMs:
      given.maxHoldMs === undefined
        ? DEFAULT_MAX_HOLD_MS
        : checkLease(given.maxHoldMs, "maxHoldMs"),
    heartbeatTimeoutMs,
    heartbeatIntervalMs,
    shardBy: given.shardBy ?? "lock",
    prefix: given.prefix === undefined ? "edgelock" : checkPrefix(given.prefix),
    requestTimeoutMs:
      given.requestTimeoutMs === undefined
        ? DEFAULT_WATCHDOG_REQUEST_TIMEOUT_MS
        : checkDuration(given.requestTimeoutMs, "requestTimeoutMs", { min: 100, max: 60_000 }),
  };
}

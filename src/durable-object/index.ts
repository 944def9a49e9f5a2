/**
 * edgelock/durable-object: `LockWatchdog`, the Durable Object class to export and bind (see
 * wrangler.toml), and `durableObjectWatchdog()`, the Renewer that registers leases there.
 * @module
 */
export { LockWatchdog } from "./lock-watchdog.js";
export {
  type DeregisterMessage,
  type EndReason,
  type LeaseQuery,
  type RegisterMessage,
  WATCHDOG_PROTOCOL,
  WATCHDOG_ROUTES,
  type WatchdogStatus,
} from "./messages.js";
export type { DurableObjectWatchdogOptions, ResolvedWatchdogOptions } from "./options.js";
export type { AlarmInfo, WatchdogNamespace, WatchdogState, WatchdogStub } from "./platform.js";
export type { WatchdogEnv } from "./redis.js";
export { DEFAULT_MAX_HOLD_MS, ENDING_RETENTION_MS } from "./schedule.js";
export type { ShardBy } from "./shard.js";
export { DurableObjectWatchdog, durableObjectWatchdog, type WatchedLock } from "./watchdog.js";

/**
 * edgelock/durable-object: the Durable Object watchdog. `LockWatchdog` is the Durable Object
 * class (export it from your Worker and bind it, see wrangler.toml); `durableObjectWatchdog()` is
 * the Renewer a LockClient uses to register its leases there.
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

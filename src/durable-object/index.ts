/**
 * edgelock/durable-object: `LockWatchdog`, the Durable Object class to export and bind (see
 * wrangler.toml), and `durableObjectWatchdog()`, the Renewer that registers leases there. The
 * protocol between them (routes, messages, `WATCHDOG_PROTOCOL`) is internal: src/durable-object/
 * messages.ts.
 * @module
 */
export { LockWatchdog } from "./lock-watchdog.js";
export type { EndReason, WatchdogStatus } from "./messages.js";
export type { DurableObjectWatchdogOptions } from "./options.js";
export type { WatchdogNamespace } from "./platform.js";
export type { WatchdogEnv } from "./redis.js";
export type { ShardBy } from "./shard.js";
export { DurableObjectWatchdog, durableObjectWatchdog, type WatchedLock } from "./watchdog.js";

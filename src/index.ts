/**
 * edgelock: Redisson-grade distributed locks for edge runtimes, over HTTP Redis.
 * @module
 */
export { LockClient, type LockClientOptions } from "./client.js";
export {
  EdgelockError,
  LockAbortedError,
  LockBackendError,
  LockBudgetExceededError,
  LockInputError,
  LockLostError,
  LockNotHeldError,
  LockWaitTimeoutError,
} from "./errors.js";
export type { LockEvent, LockEventListener, LockEventType } from "./events.js";
export { LockHandle } from "./locks/lock/handle.js";
export { type AcquireOptions, Lock } from "./locks/lock/lock.js";
export type { RedisLike } from "./transport/redis-like.js";
export { MAX_DURATION_MS, MAX_NAME_BYTES, MIN_LEASE_MS } from "./validate.js";
export type { WaitOptions } from "./wait/policy.js";
export { DEFAULT_WAIT_POLICY } from "./wait/policy.js";
export { type InProcessRenewerOptions, inProcessRenewer } from "./watchdog/in-process.js";
export type { Renewal, RenewalTarget, Renewer } from "./watchdog/renewer.js";

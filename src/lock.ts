/**
 * `edgelock/lock`: the reentrant lock alone (`PlainLockClient`: `lock()`, `withLock()`,
 * `scope()`), so a Worker that needs only that ships a fraction of the root entry. Locks, handles
 * and errors are the root's; the root's `LockClient` extends `PlainLockClient`.
 * @module
 */

export {
  type AnyEdgelockError,
  EdgelockError,
  type EdgelockErrorName,
  isEdgelockError,
  LockAbortedError,
  LockBackendError,
  LockBudgetExceededError,
  LockInputError,
  LockLostError,
  LockNotHeldError,
  LockScopeUnavailableError,
  LockWaitTimeoutError,
} from "./errors.js";
export type { LockEvent, LockEventListener, LockEventType, WaitWhy } from "./events.js";
export { LockHandle } from "./hold/handle.js";
export type { HeldLock } from "./hold/held-lock.js";
export { type AcquireOptions, Lock } from "./locks/exclusive/lock.js";
export { type LockClientOptions, PlainLockClient } from "./plain-lock-client.js";
export type { RedisLike } from "./transport/redis-like.js";
export type { WaitOptions } from "./wait/policy.js";
export type { HoldKind, Renewal, RenewalTarget, Renewer } from "./watchdog/renewer.js";
export { type InProcessRenewerOptions, inProcessRenewer } from "./watchdog/renewer.js";

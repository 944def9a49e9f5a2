/**
 * edgelock: Redisson-grade distributed locks for edge runtimes, over HTTP Redis.
 * @module
 */
export { LockClient, type LockClientOptions } from "./client.js";
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
  LockUpgradeError,
  LockWaitTimeoutError,
  QuorumLostError,
  type QuorumTally,
  QuorumUnreachableError,
  QuorumWaitTimeoutError,
} from "./errors.js";
export type { LockEvent, LockEventListener, LockEventType } from "./events.js";
export { FairLock, type FairLockOptions } from "./locks/fair-lock/fair-lock.js";
export { LockHandle } from "./locks/handle.js";
export type { HeldLock } from "./locks/held-lock.js";
export { type AcquireOptions, Lock } from "./locks/lock/lock.js";
export { MultiLockHandle, type MultiLockMember } from "./locks/multi-lock/handle.js";
export { MultiLock } from "./locks/multi-lock/multi-lock.js";
export { ReadLock } from "./locks/read-write-lock/read-lock.js";
export {
  ReadWriteLock,
  type ReadWriteLockOptions,
} from "./locks/read-write-lock/read-write-lock.js";
export { WriteLock } from "./locks/read-write-lock/write-lock.js";
export { QuorumLockHandle } from "./locks/red-lock/handle.js";
export { QuorumLock } from "./locks/red-lock/quorum-lock.js";
export { RedLock, type RedLockOptions } from "./locks/red-lock/red-lock.js";
export { type LockKind, SingleNameLock } from "./locks/single-name-lock.js";
export type { RedisLike } from "./transport/redis-like.js";
export { MAX_DURATION_MS, MAX_NAME_BYTES, MIN_LEASE_MS } from "./validate.js";
export type { WaitOptions } from "./wait/policy.js";
export { DEFAULT_WAIT_POLICY } from "./wait/policy.js";
export { type InProcessRenewerOptions, inProcessRenewer } from "./watchdog/in-process.js";
export type { Renewal, RenewalTarget, Renewer } from "./watchdog/renewer.js";

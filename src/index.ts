/**
 * edgelock: Redisson-grade distributed locks for edge runtimes, over HTTP Redis. Everything of
 * `edgelock/lock` (the plain lock, its handle, errors and watchdog, and `PlainLockClient`), with
 * the `LockClient` that also makes the other kinds, and those kinds. Internals stay out: tests
 * import them by their source path (docs/api.md, "What the entries export").
 * @module
 */

export { LockClient, type LockClientOptions } from "./client.js";
export {
  LockUpgradeError,
  QuorumLostError,
  type QuorumTally,
  QuorumUnreachableError,
  QuorumWaitTimeoutError,
  SemaphoreCapacityError,
  SemaphoreNotInitializedError,
} from "./errors.js";
export * from "./lock.js";
export {
  CountDownLatch,
  type CountDownLatchOptions,
  type LatchAwaitOptions,
} from "./locks/count-down-latch/latch.js";
export { FairLock, type FairLockOptions } from "./locks/fair-lock/fair-lock.js";
export { MultiLockHandle, type MultiLockMember } from "./locks/multi-lock/handle.js";
export { MultiLock } from "./locks/multi-lock/multi-lock.js";
export { QuorumLockHandle } from "./locks/quorum-lock/handle.js";
export { QuorumLock } from "./locks/quorum-lock/quorum-lock.js";
export { RedLock, type RedLockOptions } from "./locks/quorum-lock/red-lock.js";
export { ReadLock } from "./locks/read-write-lock/read-lock.js";
export {
  ReadWriteLock,
  type ReadWriteLockOptions,
} from "./locks/read-write-lock/read-write-lock.js";
export { WriteLock } from "./locks/read-write-lock/write-lock.js";
export type { SemaphoreState } from "./locks/semaphore/capacity.js";
export type { PermitHandle } from "./locks/semaphore/permit-handle.js";
export {
  type PermitOptions,
  Semaphore,
  type SemaphoreOptions,
} from "./locks/semaphore/semaphore.js";

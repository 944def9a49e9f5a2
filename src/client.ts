/**
 * The root entry's LockClient: the plain-lock client (src/plain-lock-client.ts) plus the other lock
 * kinds. Kept apart so that `edgelock/lock` does not pull these kinds into a Worker's bundle.
 */

import { CountDownLatch, type CountDownLatchOptions } from "./locks/count-down-latch/latch.js";
import type { Lock } from "./locks/exclusive/lock.js";
import { FairLock, type FairLockOptions } from "./locks/fair-lock/fair-lock.js";
import { MultiLock } from "./locks/multi-lock/multi-lock.js";
import {
  ReadWriteLock,
  type ReadWriteLockOptions,
} from "./locks/read-write-lock/read-write-lock.js";
import { Semaphore, type SemaphoreOptions } from "./locks/semaphore/semaphore.js";
import { PlainLockClient, runtimeOf } from "./plain-lock-client.js";

export type { LockClientOptions } from "./plain-lock-client.js";

/**
 * The client of every lock kind: the plain lock of PlainLockClient, and `fairLock()`,
 * `readWriteLock()`, `multiLock()`, `semaphore()` and `countDownLatch()`.
 */
export class LockClient extends PlainLockClient {
  /**
   * All of `locks` or none (Redisson RedissonMultiLock). Members on one Redis client are taken
   * in one script call (one request); members of other clients (other databases) in parallel,
   * rolled back exactly when any misses. Owner, waiting and watchdog follow this client.
   * @param locks locks from `client.lock(name)` of this or other clients; no lock twice
   * @example
   * const both = client.multiLock([client.lock("account:1"), client.lock("account:2")]);
   * await using held = await both.acquire({ waitMs: 5_000 });
   */
  multiLock(locks: readonly Lock[]): MultiLock {
    return new MultiLock(runtimeOf(this), locks);
  }

  /**
   * The fair lock `name` (Redisson getFairLock): first come, first served among waiters. Cheap:
   * no request until you use it.
   * @param options `waiterTimeoutMs` (default 5000): how long a waiter that stopped polling keeps
   *   its place in the queue
   */
  fairLock(name: string, options?: FairLockOptions): FairLock {
    return new FairLock(runtimeOf(this), name, options);
  }

  /**
   * The read-write lock `name` (Redisson getReadWriteLock): `.readLock()` and `.writeLock()`.
   * Cheap: no request until you use it.
   * @param options `writerPreference` (default true), `waiterTimeoutMs` (default 5000)
   */
  readWriteLock(name: string, options?: ReadWriteLockOptions): ReadWriteLock {
    return new ReadWriteLock(runtimeOf(this), name, options);
  }

  /**
   * The counting semaphore `name` (Redisson RSemaphore / RPermitExpirableSemaphore): at most its
   * capacity of permits held at once, across every isolate. The capacity lives in Redis
   * (`trySetPermits`, `setPermits`, or `initialPermits` here); every acquisition is a hold of
   * permits with its own lease. Cheap: no request until you use it.
   * @param options `initialPermits` (default none), `waiterTimeoutMs` (default 5000)
   * @example
   * const upstream = client.semaphore(`openai:${tenant}`, { initialPermits: 10 });
   * await using permit = await upstream.acquire({ waitMs: 2_000, leaseMs: 30_000 });
   */
  semaphore(name: string, options?: SemaphoreOptions): Semaphore {
    return new Semaphore(runtimeOf(this), name, options);
  }

  /**
   * The count-down latch `name` (Redisson RCountDownLatch): `trySetCount(n)`, `countDown()`,
   * `await()`. Cheap: no request until you use it.
   * @param options `ttlMs` (default one day): an abandoned latch vanishes then (and reads open)
   */
  countDownLatch(name: string, options?: CountDownLatchOptions): CountDownLatch {
    return new CountDownLatch(runtimeOf(this), name, options);
  }
}

/**
 * The read-write lock (Redisson RReadWriteLock): many readers or one writer, both reentrant.
 * A writer may take read holds and then release the write lock to keep reading (downgrade); a
 * reader asking for the write lock fails at once with LockUpgradeError instead of deadlocking.
 * Writer preference (default on) keeps a stream of new readers from starving writers.
 */

import { readWriteLockKeys } from "../../hold/script.js";
import { checkLockName } from "../../validate.js";
import type { LockRuntime } from "../../wait/runtime.js";
import { ReadLock } from "./read-lock.js";
import {
  type ReadWriteLockOptions,
  type ReadWriteSettings,
  resolveReadWriteSettings,
} from "./settings.js";
import { WriteLock } from "./write-lock.js";

export type { ReadWriteLockOptions };

/**
 * A read-write lock (Redisson RReadWriteLock), from `client.readWriteLock(name)`: many readers
 * or one writer, by its `readLock()` and `writeLock()`.
 */
export class ReadWriteLock {
  readonly name: string;
  /** Whether new readers wait behind a waiting writer. */
  readonly writerPreference: boolean;
  /** How long a waiting writer's registration lasts without a poll, in ms. */
  readonly waiterTimeoutMs: number;
  readonly #read: ReadLock;
  readonly #write: WriteLock;

  /** @internal Use `client.readWriteLock(name, options)`. */
  constructor(runtime: LockRuntime, name: unknown, options?: ReadWriteLockOptions) {
    this.name = checkLockName(name);
    const settings: ReadWriteSettings = resolveReadWriteSettings(options);
    this.writerPreference = settings.writerPreference;
    this.waiterTimeoutMs = settings.waiterTimeoutMs;
    const keys = readWriteLockKeys(runtime.prefix, this.name);
    const side = { runtime, keys, name: this.name, settings };
    this.#read = new ReadLock(side);
    this.#write = new WriteLock(side);
  }

  /** The shared side: many owners may hold it at once while nobody writes. */
  readLock(): ReadLock {
    return this.#read;
  }

  /** The exclusive side: one owner, and no reader but itself. */
  writeLock(): WriteLock {
    return this.#write;
  }
}

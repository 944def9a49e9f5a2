import { newOperationId } from "../../ids.js";
import {
  type AcquireOptions,
  type AcquisitionSpec,
  acquireOrNull,
  acquireOrThrow,
} from "../acquisition.js";
import { ownerToCount, releaseForOwner } from "../by-owner.js";
import type { ReadWriteLockKeys } from "../keys.js";
import type { LockHandle } from "../lock/handle.js";
import type { LockRuntime } from "../runtime.js";
import { attemptReadAcquire } from "./read-acquire.js";
import { extendReadHold } from "./read-extend.js";
import { forceReleaseReads } from "./read-force-release.js";
import { inspectReads } from "./read-inspect.js";
import { releaseReadHold } from "./read-release.js";
import type { ReadWriteSettings } from "./settings.js";

export class ReadLock {
  /** The name of the read-write lock. */
  readonly name: string;
  readonly #runtime: LockRuntime;
  readonly #keys: ReadWriteLockKeys;
  readonly #settings: ReadWriteSettings;

  /** @internal Use `client.readWriteLock(name).readLock()`. */
  constructor(
    runtime: LockRuntime,
    keys: ReadWriteLockKeys,
    name: string,
    settings: ReadWriteSettings,
  ) {
    this.name = name;
    this.#runtime = runtime;
    this.#keys = keys;
    this.#settings = settings;
  }

  /**
   * Takes a read hold once no other owner holds the write lock (and, with writer preference, no
   * writer waits, unless this owner already holds), waiting as long as `waitMs` allows. Throws
   * LockWaitTimeoutError, LockAbortedError or LockBudgetExceededError when the wait ends first.
   * @example
   * await using reading = await client.readWriteLock("catalog").readLock().acquire();
   */
  acquire(options?: AcquireOptions): Promise<LockHandle> {
    return acquireOrThrow(this.#spec(), options);
  }

  /** Like `acquire()`, but resolves to null when `waitMs` (default 0) passes. */
  tryAcquire(options?: AcquireOptions): Promise<LockHandle | null> {
    return acquireOrNull(this.#spec(), options);
  }

  /** True when any owner holds a live read hold. */
  async isLocked(): Promise<boolean> {
    return (await inspectReads(this.#runtime.ctx, this.#keys, undefined)).locked;
  }

  /** True when `owner` holds at least one live read hold. */
  async isHeldBy(owner: string): Promise<boolean> {
    return (await this.holdCount(owner)) > 0;
  }

  /**
   * Live read holds of `owner` (default: the enclosing scope's owner; outside a scope, all read
   * holds of all owners). 0 when none.
   */
  async holdCount(owner?: string): Promise<number> {
    const who = ownerToCount(this.#runtime, owner);
    return (await inspectReads(this.#runtime.ctx, this.#keys, who)).holds;
  }

  /** Ms until the last read hold surely ends (without renewal), or null when none is held. */
  async remainingTtl(): Promise<number | null> {
    return (await inspectReads(this.#runtime.ctx, this.#keys, undefined)).ttlMs;
  }

  /** Drops every read hold whoever holds it. True when live read holds were dropped. */
  forceRelease(): Promise<boolean> {
    return forceReleaseReads(this.#runtime.ctx, this.#keys);
  }

  /**
   * Releases one read hold of `owner` without its handle (the one that would expire first).
   * Throws LockNotHeldError when that owner holds none.
   */
  release(options: { owner: string }): Promise<void> {
    return releaseForOwner(options, `The read lock "${this.name}"`, (owner) =>
      releaseReadHold(this.#runtime.ctx, this.#keys, owner, null),
    );
  }

  /** The spec of one acquisition: a new read hold, named before the first attempt. */
  #spec(): AcquisitionSpec {
    const runtime = this.#runtime;
    const { ctx } = runtime;
    const keys = this.#keys;
    const holdId = newOperationId();
    const { writerPreference } = this.#settings;
    return {
      runtime,
      name: this.name,
      // One renewal per read hold: each has its own expiry.
      watchKey: `${keys.reads}:${holdId}`,
      attempt: (owner, leaseMs) =>
        attemptReadAcquire(ctx, keys, owner, leaseMs, holdId, writerPreference),
      control: (owner) => ({
        extend: (ms) => extendReadHold(ctx, keys, owner, holdId, ms),
        release: (operationId) => releaseReadHold(ctx, keys, owner, holdId, operationId),
      }),
      renew: (owner, leaseMs) => extendReadHold(ctx, keys, owner, holdId, leaseMs),
    };
  }
}

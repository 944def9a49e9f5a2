/**
 * The API every lock on one name offers (lock, fair lock, read lock, write lock), written once
 * over a record of the kind's operations. A kind supplies how one acquisition runs and how its
 * state is read, force-released and released by owner; this class turns them into the public
 * methods.
 */

import type { AcquireOptions } from "../wait/acquire.js";
import { type AcquisitionSpec, acquireOrNull, acquireOrThrow } from "../wait/acquire.js";
import type { WaitPlan } from "../wait/attempt.js";
import { ownerToCount, releaseForOwner } from "./by-owner.js";
import type { LockHandle } from "./handle.js";
import type { LockRuntime } from "./runtime.js";
import type { LockState, ReleaseResult } from "./state.js";

/** Which kind of lock an object is; replaces `instanceof` checks between kinds. */
export type LockKind = "lock" | "fairLock" | "readLock" | "writeLock";

/** The operations of one kind on one name. */
export interface LockOperations {
  readonly kind: LockKind;
  /** Names the lock in errors, e.g. `Lock "orders"`. */
  readonly description: string;
  /** How one acquisition call runs, given its plan. */
  acquisition(plan: WaitPlan): AcquisitionSpec;
  /** The state, counting the holds of `owner` (undefined: every holder's). */
  inspect(owner: string | undefined): Promise<LockState>;
  forceRelease(): Promise<boolean>;
  /** Releases one hold of `owner`. */
  release(owner: string): Promise<ReleaseResult>;
}

export class SingleNameLock {
  /** The lock's name (for a read or write lock: the name of its read-write lock). */
  readonly name: string;
  readonly #runtime: LockRuntime;
  readonly #operations: LockOperations;

  /** @internal */
  constructor(runtime: LockRuntime, name: string, operations: LockOperations) {
    this.name = name;
    this.#runtime = runtime;
    this.#operations = operations;
  }

  /** Which kind of lock this is. */
  get kind(): LockKind {
    return this.#operations.kind;
  }

  /**
   * Acquires the lock, waiting as long as `waitMs` allows. Throws LockWaitTimeoutError when the
   * time runs out, LockAbortedError on abort, LockBudgetExceededError when the poll budget is
   * spent.
   */
  acquire(options?: AcquireOptions): Promise<LockHandle> {
    return acquireOrThrow(this.#runtime, this.name, options, this.#operations.acquisition);
  }

  /** Like `acquire()`, but resolves to null instead of throwing when `waitMs` (default 0) passes. */
  tryAcquire(options?: AcquireOptions): Promise<LockHandle | null> {
    return acquireOrNull(this.#runtime, options, this.#operations.acquisition);
  }

  /** True when any owner holds the lock. */
  async isLocked(): Promise<boolean> {
    return (await this.#operations.inspect(undefined)).locked;
  }

  /** True when `owner` holds the lock (Redisson isHeldByThread). */
  async isHeldBy(owner: string): Promise<boolean> {
    return (await this.holdCount(owner)) > 0;
  }

  /**
   * Hold count of `owner` (default: the enclosing scope's owner; outside a scope, every
   * holder's). 0 when not held.
   */
  async holdCount(owner?: string): Promise<number> {
    return (await this.#operations.inspect(ownerToCount(this.#runtime, owner))).holds;
  }

  /** Remaining lease in ms (until the last hold surely ends), or null when not held. */
  async remainingTtlMs(): Promise<number | null> {
    return (await this.#operations.inspect(undefined)).ttlMs;
  }

  /** @deprecated Use `remainingTtlMs()`; this alias goes in the next minor version. */
  remainingTtl(): Promise<number | null> {
    return this.remainingTtlMs();
  }

  /** Deletes the holds whoever holds them. True when something was held. Fencing tokens go on. */
  forceRelease(): Promise<boolean> {
    return this.#operations.forceRelease();
  }

  /**
   * Releases one hold of `owner` without its handle (e.g. in another invocation). Throws
   * LockNotHeldError when that owner holds nothing.
   */
  release(options: { owner: string }): Promise<void> {
    return releaseForOwner(options, this.#operations.description, (owner) =>
      this.#operations.release(owner),
    );
  }
}

/**
 * The API every lock on one name offers (lock, fair, read, write lock), written once over the
 * kind's operations; and the internals registry that locks made of locks read their members by.
 */
import type { LockHandle } from "../hold/handle.js";
import type { LockKeys } from "../hold/script.js";
import type { LockState, ReleaseResult } from "../hold/state.js";
import type { AcquireOptions } from "../wait/acquire.js";
import { type AcquisitionSpec, acquireOrNull, acquireOrThrow } from "../wait/acquire.js";
import type { WaitPlan } from "../wait/attempt.js";
import type { LockRuntime } from "../wait/runtime.js";
import { ownerToCount, releaseForOwner } from "./by-owner.js";

/** Replaces `instanceof` checks between kinds. */
export type LockKind = "lock" | "fairLock" | "readLock" | "writeLock";

export interface LockOperations {
  readonly kind: LockKind;
  /** Names the lock in errors, e.g. `Lock "orders"`. */
  readonly description: string;
  acquisition(plan: WaitPlan): AcquisitionSpec;
  /** Counts the holds of `owner` (undefined: every holder's). */
  inspect(owner: string | undefined): Promise<LockState>;
  forceRelease(): Promise<boolean>;
  /** One hold of `owner`. */
  release(owner: string): Promise<ReleaseResult>;
}

export class SingleNameLock {
  /** For a read or write lock: its read-write lock's. */
  readonly name: string;
  readonly #runtime: LockRuntime;
  readonly #operations: LockOperations;

  /** @internal */
  constructor(runtime: LockRuntime, name: string, operations: LockOperations) {
    this.name = name;
    this.#runtime = runtime;
    this.#operations = operations;
  }

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

  async isLocked(): Promise<boolean> {
    return (await this.#operations.inspect(undefined)).locked;
  }

  /** Redisson's isHeldByThread. */
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

  /** One hold of `owner`, without its handle; LockNotHeldError when it holds nothing. */
  release(options: { owner: string }): Promise<void> {
    return releaseForOwner(options, this.#operations.description, (owner) =>
      this.#operations.release(owner),
    );
  }
}

/*
 * What a lock made of locks (MultiLock, RedLock) needs from a member, kept off the
 * public objects in a registry only the library reads.
 */

export interface LockInternals {
  readonly runtime: LockRuntime;
  readonly keys: LockKeys;
  readonly kind: LockKind;
}

const internals = new WeakMap<object, LockInternals>();

export function registerLockInternals(lock: object, value: LockInternals): void {
  internals.set(lock, value);
}

/** Set for locks made by `client.lock()` or `fairLock()`. */
export function lockInternalsOf(value: unknown): LockInternals | undefined {
  return typeof value === "object" && value !== null ? internals.get(value) : undefined;
}

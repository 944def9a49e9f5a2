import { checkLockName } from "../../validate.js";
import {
  type AcquireOptions,
  type AcquisitionSpec,
  acquireOrNull,
  acquireOrThrow,
} from "../acquisition.js";
import { ownerToCount, releaseForOwner } from "../by-owner.js";
import { type LockKeys, lockKeys } from "../keys.js";
import type { LockRuntime } from "../runtime.js";
import { attemptAcquire } from "./acquire.js";
import { extendLease } from "./extend.js";
import { forceRelease } from "./force-release.js";
import type { LockHandle } from "./handle.js";
import { inspectLock } from "./inspect.js";
import { releaseHold } from "./release.js";

export type { AcquireOptions };

/** @internal What a lock made of locks (MultiLock, RedLock) needs from a member. */
export interface LockInternals {
  readonly runtime: LockRuntime;
  readonly keys: LockKeys;
}

const internals = new WeakMap<object, LockInternals>();

/** @internal The runtime and keys of `value` if it is a Lock, else undefined. */
export function lockInternalsOf(value: unknown): LockInternals | undefined {
  return typeof value === "object" && value !== null ? internals.get(value) : undefined;
}

export class Lock {
  readonly name: string;
  readonly #runtime: LockRuntime;
  readonly #keys: LockKeys;
  readonly #spec: AcquisitionSpec;

  /** @internal Use `client.lock(name)`. */
  constructor(runtime: LockRuntime, name: unknown) {
    this.name = checkLockName(name);
    this.#runtime = runtime;
    const keys = lockKeys(runtime.prefix, this.name);
    this.#keys = keys;
    internals.set(this, { runtime, keys });
    const ctx = runtime.ctx;
    this.#spec = {
      runtime,
      name: this.name,
      watchKey: keys.lock,
      attempt: (owner, leaseMs) => attemptAcquire(ctx, keys, owner, leaseMs),
      control: (owner) => ({
        extend: (ms) => extendLease(ctx, keys, owner, ms),
        release: (operationId) => releaseHold(ctx, keys, owner, operationId),
      }),
      renew: (owner, leaseMs) => extendLease(ctx, keys, owner, leaseMs),
    };
  }

  /**
   * Acquires the lock, waiting as long as `waitMs` allows. Throws LockWaitTimeoutError when the
   * time runs out, LockAbortedError on abort, LockBudgetExceededError when the poll budget is
   * spent.
   * @example
   * await using held = await client.lock("orders:42").acquire({ waitMs: 5_000 });
   */
  acquire(options?: AcquireOptions): Promise<LockHandle> {
    return acquireOrThrow(this.#spec, options);
  }

  /** Like `acquire()`, but resolves to null instead of throwing when `waitMs` (default 0) passes. */
  tryAcquire(options?: AcquireOptions): Promise<LockHandle | null> {
    return acquireOrNull(this.#spec, options);
  }

  /** True when any owner holds the lock. */
  async isLocked(): Promise<boolean> {
    return (await inspectLock(this.#runtime.ctx, this.#keys, undefined)).locked;
  }

  /** True when `owner` holds the lock (Redisson isHeldByThread). */
  async isHeldBy(owner: string): Promise<boolean> {
    return (await this.holdCount(owner)) > 0;
  }

  /**
   * Hold count of `owner` (default: the enclosing scope's owner; outside a scope, whoever holds
   * the lock). 0 when not held.
   */
  async holdCount(owner?: string): Promise<number> {
    const who = ownerToCount(this.#runtime, owner);
    return (await inspectLock(this.#runtime.ctx, this.#keys, who)).holds;
  }

  /** Remaining lease in ms, or null when the lock is not held. */
  async remainingTtl(): Promise<number | null> {
    return (await inspectLock(this.#runtime.ctx, this.#keys, undefined)).ttlMs;
  }

  /** Deletes the lock whoever holds it. True when a lock was deleted. Fencing tokens go on. */
  forceRelease(): Promise<boolean> {
    return forceRelease(this.#runtime.ctx, this.#keys);
  }

  /**
   * Releases one hold of `owner` without its handle (e.g. in another invocation). Throws
   * LockNotHeldError when that owner holds nothing.
   */
  release(options: { owner: string }): Promise<void> {
    return releaseForOwner(options, `Lock "${this.name}"`, (owner) =>
      releaseHold(this.#runtime.ctx, this.#keys, owner),
    );
  }
}

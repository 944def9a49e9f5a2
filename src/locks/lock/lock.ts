/**
 * The reentrant lock (Redisson RLock). It composes the operations of this folder with the wait
 * policy and the watchdog; it holds no state of its own beyond its name and keys.
 */
import { LockNotHeldError, LockWaitTimeoutError } from "../../errors.js";
import {
  checkDuration,
  checkLease,
  checkLockName,
  checkOptions,
  checkOwner,
  checkSignal,
} from "../../validate.js";
import { resolveWaitPolicy, type WaitOptions } from "../../wait/policy.js";
import { pollForLock } from "../../wait/poll.js";
import { type LockKeys, lockKeys } from "../keys.js";
import type { LockRuntime } from "../runtime.js";
import { attemptAcquire } from "./acquire.js";
import { extendLease } from "./extend.js";
import { forceRelease } from "./force-release.js";
import { LockHandle } from "./handle.js";
import { inspectLock } from "./inspect.js";
import { releaseHold } from "./release.js";

export interface AcquireOptions {
  /**
   * How long to keep trying while another owner holds the lock, in ms. `acquire()`: default
   * Infinity (until acquired, aborted or out of poll budget). `tryAcquire()`: default 0 (one
   * attempt).
   */
  waitMs?: number;
  /**
   * Lease in ms: the lock expires after it and is never renewed. Default: none, which means
   * watchdog mode: the lease is the client's `watchdogTimeoutMs`, renewed every third of it
   * while the handle is held.
   */
  leaseMs?: number;
  /** Stops waiting when aborted (LockAbortedError). Default: none. */
  signal?: AbortSignal;
  /**
   * Owner token. Default: the owner of the enclosing `client.scope()`, else a fresh random one.
   * The same owner re-enters (the hold count rises); pass a handle's `owner` to continue work
   * in another invocation.
   */
  owner?: string;
  /** Overrides the client's polling policy for this call. Default: the client's. */
  wait?: WaitOptions;
}

const ACQUIRE_KEYS = ["waitMs", "leaseMs", "signal", "owner", "wait"] as const;

export class Lock {
  readonly name: string;
  readonly #runtime: LockRuntime;
  readonly #keys: LockKeys;

  /** @internal Use `client.lock(name)`. */
  constructor(runtime: LockRuntime, name: unknown) {
    this.name = checkLockName(name);
    this.#runtime = runtime;
    this.#keys = lockKeys(runtime.prefix, this.name);
  }

  /**
   * Acquires the lock, waiting as long as `waitMs` allows. Throws LockWaitTimeoutError when the
   * time runs out, LockAbortedError on abort, LockBudgetExceededError when the poll budget is
   * spent.
   * @example
   * await using held = await client.lock("orders:42").acquire({ waitMs: 5_000 });
   */
  async acquire(options?: AcquireOptions): Promise<LockHandle> {
    const attempt = await this.#acquire(options, Number.POSITIVE_INFINITY);
    if ("handle" in attempt) return attempt.handle;
    throw new LockWaitTimeoutError(this.name, attempt.waitMs, attempt.holderTtlMs);
  }

  /** Like `acquire()`, but resolves to null instead of throwing when `waitMs` (default 0) passes. */
  async tryAcquire(options?: AcquireOptions): Promise<LockHandle | null> {
    const attempt = await this.#acquire(options, 0);
    return "handle" in attempt ? attempt.handle : null;
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
    const who = owner === undefined ? this.#runtime.resolveOwnerIfScoped() : checkOwner(owner);
    return (await inspectLock(this.#runtime.ctx, this.#keys, who)).holds;
  }

  /** Remaining lease in ms, or null when the lock is not held. */
  async remainingTtl(): Promise<number | null> {
    return (await inspectLock(this.#runtime.ctx, this.#keys, undefined)).ttlMs;
  }

  /** Deletes the lock whoever holds it. True when a lock was deleted. Fencing tokens go on. */
  async forceRelease(): Promise<boolean> {
    return forceRelease(this.#runtime.ctx, this.#keys);
  }

  /**
   * Releases one hold of `owner` without its handle (e.g. in another invocation). Throws
   * LockNotHeldError when that owner holds nothing.
   */
  async release(options: { owner: string }): Promise<void> {
    const given = checkOptions<{ owner: string }>(options, "release options", ["owner"]);
    const owner = checkOwner(given.owner);
    const result = await releaseHold(this.#runtime.ctx, this.#keys, owner);
    if (!result.released) {
      throw new LockNotHeldError(`Lock "${this.name}" is not held by the given owner.`);
    }
  }

  async #acquire(
    options: AcquireOptions | undefined,
    defaultWaitMs: number,
  ): Promise<{ handle: LockHandle } | { waitMs: number; holderTtlMs: number | null }> {
    const runtime = this.#runtime;
    const given = checkOptions<AcquireOptions>(options, "acquire options", ACQUIRE_KEYS);
    const waitMs =
      given.waitMs === undefined
        ? defaultWaitMs
        : checkDuration(given.waitMs, "waitMs", { min: 0, allowInfinity: true });
    const leaseMs = given.leaseMs === undefined ? undefined : checkLease(given.leaseMs);
    const signal = checkSignal(given.signal);
    const policy =
      given.wait === undefined
        ? runtime.waitPolicy
        : resolveWaitPolicy(given.wait, runtime.waitPolicy);
    const owner = runtime.resolveOwner(given.owner);
    const renewing = leaseMs === undefined;
    const effectiveLease = leaseMs ?? runtime.watchdogTimeoutMs;

    let sentAt = 0;
    const result = await pollForLock({
      lockName: this.name,
      waitMs,
      signal,
      policy,
      attempt: async () => {
        sentAt = Date.now();
        const outcome = await attemptAcquire(runtime.ctx, this.#keys, owner, effectiveLease);
        return outcome.kind === "acquired"
          ? { done: true, value: outcome }
          : { done: false, holderTtlMs: outcome.holderTtlMs };
      },
    });
    if (!result.acquired) return { waitMs, holderTtlMs: result.holderTtlMs };

    const handle = new LockHandle({
      name: this.name,
      owner,
      fencingToken: result.value.fencingToken,
      leaseMs: effectiveLease,
      renewing,
      acquiredAt: sentAt,
      control: {
        extend: (ms) => extendLease(runtime.ctx, this.#keys, owner, ms),
        release: () => releaseHold(runtime.ctx, this.#keys, owner),
      },
    });
    if (renewing) this.#watch(handle, owner, sentAt);
    return { handle };
  }

  #watch(handle: LockHandle, owner: string, confirmedAt: number): void {
    const runtime = this.#runtime;
    const leave = runtime.watchdogs.join(
      this.#keys.lock,
      handle,
      {
        name: this.name,
        owner,
        leaseMs: runtime.watchdogTimeoutMs,
        renew: () => extendLease(runtime.ctx, this.#keys, owner, runtime.watchdogTimeoutMs),
        failed: (error) =>
          runtime.events.emit({ type: "renewalFailed", name: this.name, owner, error }),
        lost: (reason, cause) =>
          runtime.events.emit({ type: "lockLost", name: this.name, owner, reason, cause }),
      },
      confirmedAt,
    );
    handle.attachWatchdog(leave);
  }
}

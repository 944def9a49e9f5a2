/// <reference lib="esnext.disposable" preserve="true" />
// The line above keeps this module's .d.ts self-contained for users whose lib lacks disposables.
/** A hold on a lock: its fencing token, its lease, and the way to extend and release it. */

import { LockBackendError, LockLostError, LockNotHeldError } from "../errors.js";
import { newOperationId } from "../platform.js";
import { checkLease } from "../validate.js";
import type { WatchedHold } from "../watchdog/renewer.js";
import type { HeldLock } from "./held-lock.js";
import type { ReleaseResult } from "./state.js";

/** Bound to the lock's keys and the handle's owner. */
export interface HoldControl {
  extend(leaseMs: number): Promise<boolean>;
  /** The same `operationId` again after an unknown outcome replays a release that did run. */
  release(operationId: string): Promise<ReleaseResult>;
}

export interface HandleInit {
  name: string;
  /** What the errors call the hold: a lock's, or a semaphore's permits. Default "lock". */
  noun?: "lock" | "semaphore";
  owner: string;
  fencingToken: number;
  /** In watchdog mode, the watchdog timeout each renewal sets. */
  leaseMs: number;
  renewing: boolean;
  /** Client time just before the acquiring request was sent. */
  acquiredAt: number;
  /** A push hand-off's claim window: held only that long until `claimed()` confirms `leaseMs`. */
  claimLeaseMs?: number;
  control: HoldControl;
  /** Emits the client's `lockLost` event (once per handle). */
  reportLost?: (reason: string, cause?: unknown) => void;
}

type HandleState = "held" | "releasing" | "released";

/**
 * A hold on a lock (the plain, fair, read or write lock): its fencing token and lease, its
 * `signal`, and `extend()` and `release()`. `await using` releases it at the end of the scope.
 */
export class LockHandle implements HeldLock, WatchedHold {
  readonly name: string;
  /** The owner token. Pass it as `owner` to act on this hold from another invocation. */
  readonly owner: string;
  /**
   * Fencing token: grows with every new holder of this lock (re-entries share it). Send it with
   * every write to the protected resource and have the resource refuse tokens lower than the
   * highest it has seen: that keeps it safe even when a paused holder's lease ran out.
   */
  readonly fencingToken: number;
  /** The lease is renewed by a watchdog (acquired without `leaseMs`). */
  readonly renewing: boolean;

  #leaseMs: number;
  #expiresAt: number;
  #state: HandleState = "held";
  readonly #control: HoldControl;
  readonly #reportLost: ((reason: string, cause?: unknown) => void) | undefined;
  readonly #lost = new AbortController();
  /** By the watchdog or by us. */
  #lossReported = false;
  #expiryTimer: ReturnType<typeof setTimeout> | undefined;
  #leaveWatchdog: (() => void) | undefined;
  /** The id of a release that failed ambiguously; the next release() re-sends it. */
  #pendingRelease: string | undefined;
  #claimPending: boolean;
  /** An extend() was sent while the claim was pending: its answer, not the claim's, is trusted. */
  #extendedInClaim = false;
  /** How errors name the hold: `lock "a"`, `permits of semaphore "a"`. */
  readonly #what: string;

  constructor(init: HandleInit) {
    this.name = init.name;
    this.#what =
      init.noun === "semaphore" ? `permits of semaphore "${init.name}"` : `lock "${init.name}"`;
    this.owner = init.owner;
    this.fencingToken = init.fencingToken;
    this.renewing = init.renewing;
    this.#leaseMs = init.leaseMs;
    this.#control = init.control;
    this.#reportLost = init.reportLost;
    this.#claimPending = init.claimLeaseMs !== undefined;
    this.#expiresAt = init.acquiredAt + (init.claimLeaseMs ?? init.leaseMs);
    if (!this.renewing || this.#claimPending) this.#armExpiry();
    // A watchdog hold's first lease is the same promise: an answer slower than the watchdog
    // timeout brings back a hold Redis may have given another owner already.
    else if (this.#expiresAt <= Date.now()) this.#expireNow();
  }

  /** @internal True while a handed-off hold's own lease is not confirmed yet. */
  get claimPending(): boolean {
    return this.#claimPending;
  }

  /** As acquired or last extended (watchdog mode: the watchdog timeout). */
  get leaseMs(): number {
    return this.#leaseMs;
  }

  /**
   * Aborts when the lock is known to be lost: the lease ran out (lease mode), or the watchdog
   * found it gone or could not renew it in time. Its reason is a LockLostError.
   */
  get signal(): AbortSignal {
    return this.#lost.signal;
  }

  /**
   * The latest moment (client clock) the lock is surely held until, without renewal. In
   * watchdog mode it moves forward with each renewal only on the server; treat it as a floor.
   */
  get expiresAt(): number {
    return this.#expiresAt;
  }

  /** True once `release()` succeeded (or failed because the hold was already gone). */
  get released(): boolean {
    return this.#state === "released";
  }

  /** @internal */
  attachWatchdog(leave: () => void): void {
    this.#leaveWatchdog = leave;
  }

  /** @internal The watchdog found the lock lost (and emitted `lockLost`). */
  lockLost(error: LockLostError): void {
    this.#lossReported = true;
    if (!this.#lost.signal.aborted) this.#lost.abort(error);
  }

  /**
   * Re-arms the lease to `ms` from now. Throws LockNotHeldError if the hold is gone.
   * @param ms the new lease, whole milliseconds (at least 100)
   */
  async extend(ms: number): Promise<void> {
    const leaseMs = checkLease(ms, "extend(ms)");
    this.#assertHeld("extend");
    if (this.#claimPending) this.#extendedInClaim = true;
    const sentAt = Date.now();
    if (!(await this.#control.extend(leaseMs))) {
      this.#lose("it was gone when extended");
      throw new LockNotHeldError(
        `Cannot extend ${this.#what}: this owner no longer holds it (lease expired or force-released).`,
      );
    }
    this.#leaseMs = leaseMs;
    this.#expiresAt = sentAt + leaseMs;
    if (!this.renewing || this.#claimPending) this.#armExpiry();
  }

  /** @internal The claim was confirmed by a request sent at `sentAt`. */
  claimed(sentAt: number, leaseMs: number): void {
    // Known lost stays lost: the owner's hold the claim found may be a later one.
    if (this.#lost.signal.aborted) return;
    this.#claimPending = false;
    // After an extend() in the window the server's lease is the extend's, or the confirmation
    // shifted that one (not the grant's): only the extend's answer says how long it holds.
    if (!this.#extendedInClaim) this.#expiresAt = sentAt + leaseMs;
    if (this.renewing) {
      if (this.#expiryTimer !== undefined) clearTimeout(this.#expiryTimer);
    } else {
      this.#armExpiry();
    }
  }

  /** @internal Gone at confirmation. */
  claimFailed(reason: string): void {
    this.#lose(reason);
  }

  /**
   * Releases this hold (one level of re-entry). Throws LockNotHeldError if it was released
   * already or the lock is no longer held by this owner (lease expired, force-released).
   */
  async release(): Promise<void> {
    this.#assertHeld("release");
    this.#state = "releasing";
    this.#pendingRelease ??= newOperationId();
    let result: ReleaseResult;
    try {
      result = await this.#control.release(this.#pendingRelease);
    } catch (error) {
      // Unknown outcome: keep the hold so release() can be retried with the same operation id.
      this.#state = "held";
      throw error instanceof LockBackendError ? error : new LockBackendError(String(error));
    }
    this.#pendingRelease = undefined;
    this.#state = "released";
    this.#stopTracking();
    if (!result.released) {
      this.#lose("it was not held by this owner at release (lease expired or force-released)");
      throw new LockNotHeldError(
        `Release found ${this.#what} not held by this owner: the lease expired or it was force-released.`,
      );
    }
  }

  /**
   * `await using handle = await lock.acquire()` releases at the end of the block and never
   * throws over its finished work: a hold found lost at release or a release Redis did not
   * answer is reported through `signal`, the `lockLost` event and `released` (fencing tokens,
   * not the release, keep the resource safe). After a failed release the watchdog stops, so the
   * lease frees the lock; `release()` may still retry.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#state !== "held") return;
    try {
      await this.release();
    } catch (error) {
      // LockNotHeldError: release() has reported the loss. Otherwise the outcome is unknown.
      if (this.#state === "held") {
        this.#stopTracking();
        this.#lose("its release failed; the lease frees it when it runs out", error);
      }
    }
  }

  #assertHeld(action: string): void {
    if (this.#state !== "held") {
      throw new LockNotHeldError(`Cannot ${action} ${this.#what}: this handle was released.`);
    }
  }

  /** Known lost (or given up): aborts the signal and emits `lockLost`, once each. */
  #lose(reason: string, cause?: unknown): void {
    if (!this.#lost.signal.aborted) {
      const error = new LockLostError(`Lost ${this.#what}: ${reason}.`, { cause });
      this.#lost.abort(error);
    }
    if (this.#lossReported) return;
    this.#lossReported = true;
    this.#reportLost?.(reason, cause);
  }

  #armExpiry(): void {
    if (this.#expiryTimer !== undefined) clearTimeout(this.#expiryTimer);
    if (this.#expiresAt <= Date.now()) {
      // Already over (an answer slower than the lease): lost now, not on the next tick.
      this.#expireNow();
      return;
    }
    const timer = setTimeout(() => this.#expireNow(), this.#expiresAt - Date.now());
    (timer as { unref?: () => void }).unref?.();
    this.#expiryTimer = timer;
  }

  #expireNow(): void {
    if (!this.#lost.signal.aborted) {
      this.#lost.abort(new LockLostError(`The lease of ${this.#what} expired.`));
    }
  }

  #stopTracking(): void {
    if (this.#expiryTimer !== undefined) clearTimeout(this.#expiryTimer);
    this.#leaveWatchdog?.();
    this.#leaveWatchdog = undefined;
  }
}

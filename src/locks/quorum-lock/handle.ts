/// <reference lib="esnext.disposable" preserve="true" />
// The line above keeps this module's .d.ts self-contained for users whose lib lacks disposables.
/**
 * A RedLock hold: on a majority of databases, trusted until `validUntil` (lease − elapsed −
 * drift). Its signal aborts when the majority is lost or the validity runs out unrenewed.
 */

import { LockLostError, QuorumLostError } from "../../errors.js";
import type { LockHandle } from "../handle.js";
import type { HeldLock } from "../held-lock.js";
import type { QuorumHold } from "./hold.js";

export class QuorumLockHandle implements HeldLock {
  /** The lock's name (the same on every database). */
  readonly name: string;
  /** The owner token, the same on every database. */
  readonly owner: string;
  /** Databases in the RedLock. */
  readonly databases: number;
  /** Databases that must hold it: floor(databases / 2) + 1. */
  readonly quorum: number;
  readonly #hold: LockHandle;
  readonly #state: QuorumHold;
  readonly #lost = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** @internal Built by QuorumLock.acquire(). */
  constructor(hold: LockHandle, state: QuorumHold) {
    this.name = hold.name;
    this.owner = hold.owner;
    this.databases = state.settings.databases;
    this.quorum = state.settings.quorum;
    this.#hold = hold;
    this.#state = state;
    hold.signal.addEventListener("abort", () => this.#innerLost(hold.signal.reason), {
      once: true,
    });
    this.#armValidityTimer();
  }

  /**
   * Per database, in the order of the clients given to `new RedLock()`: that database's fencing
   * token, or null where the lock is not held. Each is that database's own counter: tokens of
   * different databases cannot be compared, and no single token grows across holders. Where a
   * resource must refuse stale holders, use a lock on one database and its fencing token.
   */
  get fencingTokens(): readonly (number | null)[] {
    return this.#state.fencingTokens();
  }

  /** Null: no single token guards a RedLock hold (see `fencingTokens`). */
  get fencingToken(): null {
    return null;
  }

  /** Databases currently counted as holding it (at least `quorum` while it is valid). */
  get heldOn(): number {
    return this.#state.held.length;
  }

  /**
   * Until when (client clock) the hold is trusted: when a majority last set the lease, plus the
   * lease, minus the drift allowance. Moves with `extend()` and watchdog renewals.
   */
  get validUntil(): number {
    return this.#state.validUntil;
  }

  /** The contract's name for `validUntil`: until when the hold is trusted. */
  get expiresAt(): number {
    return this.#state.validUntil;
  }

  /** The validity left now, in ms: lease − elapsed − drift (0 once run out). */
  get validityMs(): number {
    return Math.max(0, this.#state.validUntil - Date.now());
  }

  /** The lease in ms as acquired or last extended (watchdog mode: the watchdog timeout). */
  get leaseMs(): number {
    return this.#hold.leaseMs;
  }

  /** True when a watchdog renews it (acquired without `leaseMs`); renewal needs a majority. */
  get renewing(): boolean {
    return this.#hold.renewing;
  }

  /** True once `release()` has run to its end. */
  get released(): boolean {
    return this.#hold.released;
  }

  /**
   * Aborts when the hold can no longer be trusted: QuorumLostError when renewal or `extend()`
   * found a majority impossible or none confirmed it in time; LockLostError when a lease ran out.
   */
  get signal(): AbortSignal {
    return this.#lost.signal;
  }

  /**
   * Re-arms the lease to `ms` from now on the databases that hold it; needs a majority, else
   * throws LockNotHeldError (and the signal aborts).
   * @param ms the new lease, whole milliseconds (at least 100)
   */
  async extend(ms: number): Promise<void> {
    await this.#hold.extend(ms);
    this.#armValidityTimer();
  }

  /**
   * Releases one hold on every database that holds it. Throws LockNotHeldError when it was no
   * longer held on a majority (it had been lost), LockBackendError when too many databases did
   * not answer (call it again: only those are asked, with the same operation ids).
   */
  async release(): Promise<void> {
    try {
      await this.#hold.release();
    } finally {
      if (this.#hold.released) this.#clearTimer();
    }
  }

  /**
   * `await using held = await lock.acquire()` releases at the end of the block; a hold lost on
   * the majority, or a release too few databases answered, is reported through `signal` and
   * `lockLost`, never thrown (see `LockHandle[Symbol.asyncDispose]`).
   */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.#hold[Symbol.asyncDispose]();
    if (this.#hold.released) this.#clearTimer();
  }

  #innerLost(reason: unknown): void {
    // The inner handle's own lease timer fires after ours (it ignores drift): that is expiry.
    const expired = Date.now() >= this.#state.validUntil && !this.renewing;
    const message = reason instanceof Error ? reason.message : String(reason);
    this.#abort(
      expired
        ? new LockLostError(`The validity of RedLock "${this.name}" ran out.`, { cause: reason })
        : new QuorumLostError(`RedLock "${this.name}" lost its majority: ${message}`, {
            cause: reason,
          }),
    );
  }

  #armValidityTimer(): void {
    this.#clearTimer();
    if (this.#lost.signal.aborted || this.released) return;
    const timer = setTimeout(
      () => {
        if (Date.now() < this.#state.validUntil) {
          this.#armValidityTimer(); // renewed meanwhile
        } else if (this.renewing) {
          this.#abort(
            new QuorumLostError(
              `No majority renewed RedLock "${this.name}" before its validity ran out.`,
            ),
          );
        } else {
          this.#abort(
            new LockLostError(
              `The validity of RedLock "${this.name}" ran out (lease − elapsed − drift).`,
            ),
          );
        }
      },
      Math.max(0, this.#state.validUntil - Date.now()),
    );
    (timer as { unref?: () => void }).unref?.();
    this.#timer = timer;
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #abort(error: LockLostError): void {
    this.#clearTimer();
    if (!this.#lost.signal.aborted) this.#lost.abort(error);
  }
}

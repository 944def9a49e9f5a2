/// <reference lib="esnext.disposable" preserve="true" />
// The line above keeps this module's .d.ts self-contained for users whose lib lacks disposables.
/**
 * A RedLock hold: on a majority of databases, trusted until `validUntil` (lease − elapsed −
 * drift). Its signal aborts when the majority is lost or the validity runs out unrenewed.
 */

import { LockLostError, QuorumLostError } from "../../errors.js";
import type { LockHandle } from "../../hold/handle.js";
import type { HeldLock } from "../../hold/held-lock.js";
import type { QuorumHold } from "./hold.js";

/** A RedLock hold: the databases that granted it, each with its own fencing token, trusted until `validUntil`. */
export class QuorumLockHandle implements HeldLock {
  /** The same on every database. */
  readonly name: string;
  /** The same on every database. */
  readonly owner: string;
  readonly databases: number;
  /** floor(databases / 2) + 1. */
  readonly quorum: number;
  readonly #hold: LockHandle;
  readonly #state: QuorumHold;
  readonly #lost = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** @internal */
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
   * Per database, in the order given to `new RedLock()`; null where not held. Each is its
   * database's own counter: they cannot be compared, and none grows across holders. Where a
   * resource must refuse stale holders, use a lock on one database and its fencing token.
   */
  get fencingTokens(): readonly (number | null)[] {
    return this.#state.fencingTokens();
  }

  /** Null: no single token guards a RedLock hold (see `fencingTokens`). */
  get fencingToken(): null {
    return null;
  }

  /** At least `quorum` while it is valid. */
  get heldOn(): number {
    return this.#state.held.length;
  }

  /**
   * Client clock: when a majority last set the lease, plus the lease, minus the drift. Moves
   * with `extend()` and renewals.
   */
  get validUntil(): number {
    return this.#state.validUntil;
  }

  /** HeldLock's name for `validUntil`. */
  get expiresAt(): number {
    return this.#state.validUntil;
  }

  /** lease − elapsed − drift, 0 once run out. */
  get validityMs(): number {
    return Math.max(0, this.#state.validUntil - Date.now());
  }

  /** As acquired or last extended (watchdog mode: the watchdog timeout). */
  get leaseMs(): number {
    return this.#hold.leaseMs;
  }

  /** A watchdog renews it (acquired without `leaseMs`); renewal needs a majority. */
  get renewing(): boolean {
    return this.#hold.renewing;
  }

  /** `release()` has run to its end. */
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
   * Re-arms the lease where held; needs a majority, else LockNotHeldError (the signal aborts).
   * @param ms the new lease, whole milliseconds (at least 100)
   */
  async extend(ms: number): Promise<void> {
    await this.#hold.extend(ms);
    this.#armValidityTimer();
  }

  /**
   * Releases one hold where held. LockNotHeldError when no majority held it any more;
   * LockBackendError when too many did not answer (call again: only those are asked, same ids).
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

/// <reference lib="esnext.disposable" preserve="true" />
// The line above keeps this module's .d.ts self-contained for users whose lib lacks disposables.
/** A hold on every member of a MultiLock: one lease, one signal, one fencing token per member. */

import { LockNotHeldError } from "../../errors.js";
import type { LockHandle } from "../../hold/handle.js";
import type { HeldLock } from "../../hold/held-lock.js";
import type { MultiHoldControl } from "./control.js";

/** One member of a MultiLock hold: its lock's name and its own fencing token. */
export interface MultiLockMember {
  readonly name: string;
  /** That lock's own (see `LockHandle.fencingToken`). */
  readonly fencingToken: number;
}

/** A MultiLock's hold: every member held by one owner, with one end; each member's fencing token in `fencingTokens`. */
export class MultiLockHandle implements HeldLock {
  /** `multi(<member names>)`. */
  readonly name: string;
  /** Shared by every member. */
  readonly owner: string;
  /** In the order the MultiLock was built from. */
  readonly members: readonly MultiLockMember[];
  readonly #hold: LockHandle;
  readonly #control: MultiHoldControl;

  /** @internal */
  constructor(hold: LockHandle, members: readonly MultiLockMember[], control: MultiHoldControl) {
    this.name = hold.name;
    this.owner = hold.owner;
    this.members = members;
    this.#hold = hold;
    this.#control = control;
  }

  /** In member order; each guards writes to that member's resource. */
  get fencingTokens(): readonly number[] {
    return this.members.map((member) => member.fencingToken);
  }

  /** Null: every member has its own token (see `fencingTokens`). */
  get fencingToken(): null {
    return null;
  }

  /** The same on every member (watchdog mode: the watchdog timeout). */
  get leaseMs(): number {
    return this.#hold.leaseMs;
  }

  /** The watchdog renews every member while the handle is held. */
  get renewing(): boolean {
    return this.#hold.renewing;
  }

  /** The latest moment (client clock) every member is surely held until, without renewal. */
  get expiresAt(): number {
    return this.#hold.expiresAt;
  }

  /** `release()` has run to its end. */
  get released(): boolean {
    return this.#hold.released;
  }

  /** Aborts with a LockLostError as soon as any member is known lost. */
  get signal(): AbortSignal {
    return this.#hold.signal;
  }

  /**
   * Re-arms every member's lease to `ms` from now; throws LockNotHeldError if one is gone.
   * @param ms the new lease, whole milliseconds (at least 100)
   */
  extend(ms: number): Promise<void> {
    return this.#hold.extend(ms);
  }

  /**
   * Releases one hold on every member. Members no longer held do not stop the others' release;
   * LockNotHeldError names them. On LockBackendError call it again: only the unfinished
   * databases are asked, with the same operation ids.
   */
  async release(): Promise<void> {
    if (this.released) return this.#hold.release(); // throws: this handle was released
    try {
      await this.#hold.release();
    } catch (error) {
      if (error instanceof LockNotHeldError && this.#control.notHeld.length > 0) {
        throw new LockNotHeldError(
          `MultiLock "${this.name}": ${this.#control.notHeld.map((name) => `"${name}"`).join(", ")} ` +
            "no longer held by this owner at release (lease expired or force-released); the other members were released.",
        );
      }
      throw error;
    }
  }

  /**
   * `await using held = await multi.acquire()` releases at the end of the block; a member found
   * lost, or a release Redis did not answer, is reported through `signal` and `lockLost`, never
   * thrown (see `LockHandle[Symbol.asyncDispose]`).
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.#hold[Symbol.asyncDispose]();
  }
}

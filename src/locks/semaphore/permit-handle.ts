/// <reference lib="esnext.disposable" preserve="true" />
// The line above keeps this module's .d.ts self-contained for users whose lib lacks disposables.
/** A hold of permits: the shared lock handle (lease, watchdog, loss) and how many it holds. */
import type { LockHandle } from "../handle.js";
import type { HeldLock } from "../held-lock.js";

export class PermitHandle implements HeldLock {
  /** How many permits this hold has. */
  readonly permits: number;
  readonly #hold: LockHandle;

  /** @internal Made by `semaphore.acquire()`. */
  constructor(hold: LockHandle, permits: number) {
    this.#hold = hold;
    this.permits = permits;
  }

  /** The semaphore's name. */
  get name(): string {
    return this.#hold.name;
  }

  /** The owner token the permits were taken with. */
  get owner(): string {
    return this.#hold.owner;
  }

  /**
   * Grows with every acquisition of this semaphore: a resource that refuses tokens lower than
   * one it has seen from the same holder slot stays safe after a paused holder's lease ran out.
   */
  get fencingToken(): number {
    return this.#hold.fencingToken;
  }

  /** The lease in ms, as acquired or last extended (watchdog mode: the watchdog timeout). */
  get leaseMs(): number {
    return this.#hold.leaseMs;
  }

  /** The latest moment (client clock, ms) the permits are surely held until, without renewal. */
  get expiresAt(): number {
    return this.#hold.expiresAt;
  }

  /** True when a watchdog renews the lease (acquired without `leaseMs`). */
  get renewing(): boolean {
    return this.#hold.renewing;
  }

  /** True once `release()` has run to its end. */
  get released(): boolean {
    return this.#hold.released;
  }

  /** Aborts (reason: a LockLostError) as soon as the permits are known to be lost. */
  get signal(): AbortSignal {
    return this.#hold.signal;
  }

  /** Re-arms the lease to `ms` from now. Throws LockNotHeldError when the permits are gone. */
  extend(ms: number): Promise<void> {
    return this.#hold.extend(ms);
  }

  /** Returns the permits. Throws LockNotHeldError when they were gone already (lease passed). */
  release(): Promise<void> {
    return this.#hold.release();
  }

  /** `await using permits = await semaphore.acquire()`: released at the end, never throwing. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.#hold[Symbol.asyncDispose]();
  }
}

/** The chaos adapter of the reentrant lock (`client.lock(name)`). */
import type { Redis } from "@upstash/redis";
import type { AcquireOptions, Lock, LockClient, LockHandle } from "../../../src/index.js";
import { lockKeys } from "../../../src/locks/keys.js";
import { type ArmingRequest, type RenewalRecord, settledBefore } from "../killable-renewer.js";
import type { ChaosHold, ChaosIsolate, ChaosPrimitive, HoldPlan } from "../primitive.js";

/** The fault-free side channel of a run: its own REST server on the same Redis. */
export interface Observer {
  readonly redis: Redis;
  /** A LockClient with the run's prefix, for read-only questions. */
  readonly client: LockClient;
}

export function reentrantLockPrimitive(prefix: string, observer: Observer): ChaosPrimitive {
  return {
    name: "lock",
    capacity: 1,
    async acquire(isolate, key, plan) {
      const lock = isolate.client.lock(key);
      const options: AcquireOptions = {
        owner: plan.owner,
        waitMs: plan.waitMs,
        ...(plan.mode === "lease" ? { leaseMs: plan.leaseMs } : {}),
      };
      const handle = plan.tryOnly ? await lock.tryAcquire(options) : await lock.acquire(options);
      if (handle === null) return null;
      return new LockHold(isolate, lock, handle, plan, Date.now());
    },
    isHeldBy: (key, owner) => observer.client.lock(key).isHeldBy(owner),
    holders: (key) => observer.redis.hkeys(lockKeys(prefix, key).lock),
  };
}

class LockHold implements ChaosHold {
  readonly #isolate: ChaosIsolate;
  readonly #lock: Lock;
  readonly #handle: LockHandle;
  readonly #plan: HoldPlan;
  /** The watchdog's record of this hold (watchdog mode). */
  readonly #renewal: RenewalRecord | undefined;
  /** This hold's own arming requests: its acquisition, re-entries and extends. */
  readonly #armed: ArmingRequest[];
  /** Set when a re-entry found the hold gone and re-created it: validity ends where it was. */
  #cap = Number.POSITIVE_INFINITY;

  constructor(
    isolate: ChaosIsolate,
    lock: Lock,
    handle: LockHandle,
    plan: HoldPlan,
    settledAt: number,
  ) {
    this.#isolate = isolate;
    this.#lock = lock;
    this.#handle = handle;
    this.#plan = plan;
    this.#armed = [{ sentAt: settledAt, settledAt }];
    this.#renewal = handle.renewing ? isolate.renewer.record(lock.name, handle.owner) : undefined;
  }

  get owner(): string {
    return this.#handle.owner;
  }

  get fencingToken(): number {
    return this.#handle.fencingToken;
  }

  get signal(): AbortSignal {
    return this.#handle.signal;
  }

  validUntil(): number {
    const until =
      this.#renewal === undefined
        ? this.#handle.expiresAt
        : this.#renewal.confirmedSentAt + this.#handle.leaseMs;
    return Math.min(this.#cap, until);
  }

  lastArmedSettledAt(sentBefore: number): number {
    return Math.max(
      settledBefore(this.#armed, sentBefore),
      settledBefore(this.#renewal?.history ?? [], sentBefore),
    );
  }

  /** Runs an arming request, recording when it was sent and when it settled. */
  async #arming<T>(request: () => Promise<T>): Promise<T> {
    const armed: ArmingRequest = { sentAt: Date.now(), settledAt: undefined };
    this.#armed.push(armed);
    try {
      return await request();
    } finally {
      armed.settledAt = Date.now();
    }
  }

  async reenter(): Promise<ChaosHold> {
    const before = this.validUntil();
    const inner = await this.#arming(() =>
      this.#lock.acquire({
        owner: this.owner,
        waitMs: 0,
        ...(this.#plan.mode === "lease" ? { leaseMs: this.#plan.leaseMs } : {}),
      }),
    );
    // A different token: the outer hold had expired and this acquisition started a new one.
    if (inner.fencingToken !== this.fencingToken) this.#cap = Math.min(this.#cap, before);
    return new LockHold(this.#isolate, this.#lock, inner, this.#plan, Date.now());
  }

  async extend(ms: number): Promise<void> {
    // Watchdog mode: an extend may shorten what the watchdog set, which validUntil() cannot see.
    if (this.#renewal !== undefined) throw new Error("chaos: extend only holds in lease mode");
    await this.#arming(() => this.#handle.extend(ms));
  }

  release(): Promise<void> {
    return this.#handle.release();
  }

  crash(): void {
    if (this.#handle.renewing) this.#isolate.renewer.kill(this.#lock.name, this.owner);
  }
}

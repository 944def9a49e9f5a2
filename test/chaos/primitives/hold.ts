/**
 * The chaos hold of every handle-shaped primitive (LockHandle, MultiLockHandle,
 * QuorumLockHandle): it records its own arming requests (acquisition, re-entries, extends) and
 * reads the isolate's renewer record, so that validity and deadlines come from what the harness
 * measured, not from what the handle reports.
 */
import type { AcquireOptions } from "../../../src/index.js";
import {
  type ArmingRequest,
  confirmedDeadline,
  type RenewalRecord,
  settledBefore,
} from "../killable-renewer.js";
import type { ChaosHold, ChaosIsolate, HoldPlan } from "../primitive.js";

/** What the harness uses of a handle. */
export interface HeldHandle {
  readonly owner: string;
  /** The token guarding the workload key's fenced store; undefined when none does. */
  readonly fencingToken: number | undefined;
  readonly leaseMs: number;
  readonly renewing: boolean;
  /** Lease mode: when the handle believes its lease ends. */
  readonly expiresAt: number;
  readonly signal: AbortSignal;
  /** The handle's own validity bound when it has one besides its lease (RedLock's drift). */
  validUntil?(): number;
  extend(ms: number): Promise<void>;
  release(): Promise<void>;
}

/** Takes a hold of one workload key for an isolate: the primitive's acquire and tryAcquire. */
export interface Opener {
  acquire(options: AcquireOptions): Promise<HeldHandle>;
  tryAcquire(options: AcquireOptions): Promise<HeldHandle | null>;
}

export type OpenerFactory = (isolate: ChaosIsolate, key: string, plan: HoldPlan) => Opener;

/** The Opener of a lock whose handles are not LockHandles: `held` maps its handle. */
export function mappedOpener<H>(
  lock: {
    acquire(options: AcquireOptions): Promise<H>;
    tryAcquire(options: AcquireOptions): Promise<H | null>;
  },
  held: (handle: H) => HeldHandle,
): Opener {
  return {
    acquire: async (options) => held(await lock.acquire(options)),
    tryAcquire: async (options) => {
      const handle = await lock.tryAcquire(options);
      return handle === null ? null : held(handle);
    },
  };
}

function optionsOf(plan: HoldPlan, owner: string, waitMs: number): AcquireOptions {
  return {
    owner,
    waitMs,
    ...(plan.mode === "lease" ? { leaseMs: plan.leaseMs } : {}),
    ...(plan.signal === undefined ? {} : { signal: plan.signal }),
  };
}

/** The acquire of a ChaosPrimitive built on `open`. */
export async function acquireHold(
  open: OpenerFactory,
  isolate: ChaosIsolate,
  key: string,
  plan: HoldPlan,
): Promise<ChaosHold | null> {
  const opener = open(isolate, key, plan);
  const options = optionsOf(plan, plan.owner, plan.waitMs);
  const handle = plan.tryOnly ? await opener.tryAcquire(options) : await opener.acquire(options);
  if (handle === null) return null;
  return new HandleHold(isolate, opener, handle, plan, Date.now(), key);
}

export class HandleHold implements ChaosHold {
  readonly #isolate: ChaosIsolate;
  readonly #opener: Opener;
  readonly #handle: HeldHandle;
  readonly #plan: HoldPlan;
  /** The watchdog's record of this hold (watchdog mode). */
  readonly #renewal: RenewalRecord | undefined;
  /** This hold's own arming requests: its acquisition, re-entries and extends. */
  readonly #armed: ArmingRequest[];
  readonly #key: string;
  /** Set when a re-entry found the hold gone and re-created it: validity ends where it was. */
  #cap = Number.POSITIVE_INFINITY;

  constructor(
    isolate: ChaosIsolate,
    opener: Opener,
    handle: HeldHandle,
    plan: HoldPlan,
    settledAt: number,
    key: string,
  ) {
    this.#isolate = isolate;
    this.#opener = opener;
    this.#handle = handle;
    this.#plan = plan;
    this.#armed = [{ sentAt: settledAt, settledAt, leaseMs: handle.leaseMs, confirmed: true }];
    this.#key = key;
    // The renewal of this very hold: sibling tasks of one owner have holds of their own.
    this.#renewal = handle.renewing
      ? isolate.renewer.record(handle.owner, { name: key, fencingToken: handle.fencingToken })
      : undefined;
  }

  get owner(): string {
    return this.#handle.owner;
  }

  get fencingToken(): number | undefined {
    return this.#handle.fencingToken;
  }

  get signal(): AbortSignal {
    return this.#handle.signal;
  }

  get shared(): boolean {
    return this.#plan.shared;
  }

  validUntil(): number {
    const until =
      this.#renewal === undefined
        ? this.#handle.expiresAt
        : this.#renewal.confirmedSentAt + this.#handle.leaseMs;
    return Math.min(this.#cap, until, this.#handle.validUntil?.() ?? Number.POSITIVE_INFINITY);
  }

  lastArmedSettledAt(sentBefore: number): number {
    return Math.max(
      settledBefore(this.#armed, sentBefore),
      settledBefore(this.#renewal?.history ?? [], sentBefore),
    );
  }

  confirmedDeadline(): number {
    return confirmedDeadline([...this.#armed, ...(this.#renewal?.history ?? [])]);
  }

  /** Runs an arming request, recording when it was sent, settled, and whether it confirmed. */
  async #arming<T>(leaseMs: number, request: () => Promise<T>): Promise<T> {
    const armed: ArmingRequest = {
      sentAt: Date.now(),
      settledAt: undefined,
      leaseMs,
      confirmed: false,
    };
    this.#armed.push(armed);
    try {
      const result = await request();
      armed.confirmed = true;
      return result;
    } finally {
      armed.settledAt = Date.now();
    }
  }

  /** Re-enters with the inner hold's own mode (lease or watchdog), which may differ. */
  async reenter(mode: HoldPlan["mode"] = this.#plan.mode): Promise<ChaosHold> {
    const before = this.validUntil();
    const { signal: _, ...outer } = this.#plan;
    const plan: HoldPlan = { ...outer, mode };
    const inner = await this.#arming(plan.leaseMs, () =>
      this.#opener.acquire(optionsOf(plan, this.owner, 0)),
    );
    // A different token: the outer hold had expired and this acquisition started a new one.
    if (inner.fencingToken !== this.fencingToken) this.#cap = Math.min(this.#cap, before);
    return new HandleHold(this.#isolate, this.#opener, inner, plan, Date.now(), this.#key);
  }

  async extend(ms: number): Promise<void> {
    // Watchdog mode: an extend may shorten what the watchdog set, which validUntil() cannot see.
    if (this.#renewal !== undefined) throw new Error("chaos: extend only holds in lease mode");
    await this.#arming(ms, () => this.#handle.extend(ms));
  }

  release(): Promise<void> {
    return this.#handle.release();
  }

  crash(): void {
    // Everything of the owner dies with its process: every renewal (also an inner hold's in
    // watchdog mode inside an outer one with a fixed lease: they share the owner) and whatever
    // its timers would still send (a handed-off hold's claim).
    this.#isolate.crash(this.owner);
  }
}

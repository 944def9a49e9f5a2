/**
 * The seam between the chaos workload and the primitive under test. The workload only knows how
 * to take a hold, act on it and drop it; each primitive (the reentrant lock today; the fair lock,
 * the read-write lock, the semaphore… as they land) supplies an adapter implementing this.
 */
import type { Redis } from "@upstash/redis";
import type { LockClient } from "../../src/index.js";
import type { KillableRenewer } from "./killable-renewer.js";

/** One simulated isolate: its own HTTP Redis client, LockClient and renewer. */
export interface ChaosIsolate {
  readonly id: number;
  /** Goes through the faulty REST server. */
  readonly redis: Redis;
  readonly client: LockClient;
  readonly renewer: KillableRenewer;
}

/** How one critical section asks for its hold. */
export interface HoldPlan {
  /** Explicit owner token, so that a holder whose acquire failed can still be tracked. */
  readonly owner: string;
  /** "lease": a fixed lease of `leaseMs`; "watchdog": renewed by the isolate's renewer. */
  readonly mode: "lease" | "watchdog";
  readonly leaseMs: number;
  /** How long to wait while the key is busy (0: a single attempt). */
  readonly waitMs: number;
  /** True: `tryAcquire` (null when busy); false: `acquire` (throws when the wait runs out). */
  readonly tryOnly: boolean;
}

/** A hold of one owner on one key, as the workload sees it. */
export interface ChaosHold {
  readonly owner: string;
  /** Fencing token; undefined for primitives without one (the store's check is then skipped). */
  readonly fencingToken: number | undefined;
  /** Aborts when the library learns the hold is lost. */
  readonly signal: AbortSignal;
  /**
   * Client time until which the hold is surely valid, from what the client knows now: lease
   * mode, `acquiredAt + lease` (moved by successful extends); watchdog mode, the last confirmed
   * renewal's send time + the timeout. Never later than the server's expiry.
   */
  validUntil(): number;
  /**
   * When the last request of this hold that may have (re)armed its lease, among those sent no
   * later than `sentBefore`, settled (Infinity while it is in flight). A holder that died at
   * `sentBefore` must have lost its hold one lease after that.
   */
  lastArmedSettledAt(sentBefore: number): number;
  /** Re-enters the hold (same owner). Resolves to the inner hold. Optional. */
  reenter?(): Promise<ChaosHold>;
  /** Re-arms the lease to `ms` from now. Optional. */
  extend?(ms: number): Promise<void>;
  release(): Promise<void>;
  /** Stops the holder without releasing: no release, no more renewals. */
  crash(): void;
}

/** A primitive under test, bound to one run's key namespace. */
export interface ChaosPrimitive {
  readonly name: string;
  /** Holders one key admits at once (1 for locks; n for an n-permit semaphore). */
  readonly capacity: number;
  acquire(isolate: ChaosIsolate, key: string, plan: HoldPlan): Promise<ChaosHold | null>;
  /** Whether `owner` holds `key` now, asked through the fault-free observer. */
  isHeldBy(key: string, owner: string): Promise<boolean>;
  /** Owners holding `key` now, asked through the fault-free observer. */
  holders(key: string): Promise<string[]>;
}

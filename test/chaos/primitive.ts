/**
 * The seam between the chaos workload and the primitive under test. The workload only knows how
 * to take a hold, act on it and drop it; each primitive (the reentrant lock, the fair lock, the
 * read-write lock, the multi-lock, RedLock, the Durable Object watchdog's locks; see
 * `primitives/`) supplies an adapter implementing this, and a reader of its state on the server.
 */
import type { Redis } from "@upstash/redis";
import type { LockClient, Renewer } from "../../src/index.js";
import type { InvariantResult } from "./invariants.js";
import type { Journal } from "./journal.js";
import type { ArmingRequest, KillableRenewer, RemoteRenewals } from "./killable-renewer.js";
import type { KeyState } from "./server-state.js";

/** One simulated isolate: its own HTTP Redis client, LockClient and renewer. */
export interface ChaosIsolate {
  readonly id: number;
  /** Goes through the faulty REST server. */
  readonly redis: Redis;
  readonly client: LockClient;
  /** One LockClient per database of the run (the first is `client`). */
  readonly clients: readonly LockClient[];
  readonly renewer: KillableRenewer;
  /**
   * Another LockClient of this isolate on the first database, through the same transport (faults,
   * tracking, subscription faults) and renewer: a second client the isolate's code made.
   */
  spawnClient?(): LockClient;
  /**
   * Kills `owner` as a crashed process: its renewals stop, and no request naming it leaves the
   * isolate any more (its pending timers would have died with the process).
   */
  crash(owner: string): void;
  /**
   * Kills `owner`'s process (as `crash`) the moment one of its acquisitions parks (push mode: its
   * blocking pop leaves), then calls `killed`. Returns the function that disarms it.
   */
  killWhenParked(owner: string, killed: (at: number) => void): () => void;
  /** When `owner`'s process was killed (crash or killWhenParked), if it was. */
  crashedAt(owner: string): number | undefined;
  /** Times from now on every request of this isolate that names `owner` (see requestsOf). */
  track(owner: string): void;
  /** The requests naming a tracked `owner`: when each was sent and settled. */
  requestsOf(owner: string): readonly ArmingRequest[];
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
  /** A shared hold (a read lock) rather than an exclusive one. */
  readonly shared: boolean;
  /** Aborts the wait (LockAbortedError), as a task of a scope that gives up. */
  readonly signal?: AbortSignal;
  /** A task of a group sharing one owner (scope siblings). */
  readonly sibling?: boolean;
}

/** What an administrator's force release targeted. */
export interface ForceReleaseTarget {
  /** The keys whose state it changes (the workload key's, as `state()` reports them). */
  readonly keys: readonly string[];
  /** Which holds it ends: exclusive ones (a lock, a write lock) or shared ones (read holds). */
  readonly holds: "exclusive" | "shared";
}

/** A hold of one owner on one key, as the workload sees it. */
export interface ChaosHold {
  readonly owner: string;
  /** Fencing token; undefined for primitives without one (the store's check is then skipped). */
  readonly fencingToken: number | undefined;
  /** Aborts when the library learns the hold is lost. */
  readonly signal: AbortSignal;
  /** Shared (a read hold: may overlap other shared holds) or exclusive. Default exclusive. */
  readonly shared?: boolean;
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
  /**
   * The latest moment the library may still trust this hold, from the harness's own record of
   * its arming requests: walking the confirmed ones in the order they settled, each one settled
   * before the deadline so far moves it to its settle time + its lease (settle, not send, time:
   * an upper bound of what the library may count). A lost hold's signal must abort by then.
   */
  confirmedDeadline(): number;
  /** Re-enters the hold (same owner; the inner hold in `mode`, default the outer's). Optional. */
  reenter?(mode?: HoldPlan["mode"]): Promise<ChaosHold>;
  /** Re-arms the lease to `ms` from now. Optional. */
  extend?(ms: number): Promise<void>;
  release(): Promise<void>;
  /** Stops the holder without releasing: no release, no more renewals. */
  crash(): void;
}

/** A primitive under test, bound to one run's key namespace. */
/** What a check may excuse of the harness's own timing. */
export interface HarnessTiming {
  /** The harness process's timer lateness over an interval (see LoopLag). */
  lateness(from: number, to: number): number;
}

export interface ChaosPrimitive {
  readonly name: string;
  /** Exclusive holders one key admits at once (1 for locks; n for an n-permit semaphore). */
  readonly capacity: number;
  /** Fraction of sections that ask for a shared hold (read locks). Default 0. */
  readonly sharedRate?: number;
  /**
   * A semaphore whose capacity an administrator changes during the run (capacity-changes.ts):
   * its base capacity (set on first use, returned to often) and the most it is raised to.
   * `capacity` is then the most.
   */
  readonly adjustableCapacity?: { readonly base: number; readonly max: number };
  /** Permits an acquisition asks for (semaphores). Default 1. */
  demandOf?(plan: HoldPlan): number;
  /** Its waiters park (push mode): some are killed while parked. */
  readonly parks?: boolean;
  /** The fraction of sections whose waiter is killed once parked. Default: the run's. */
  readonly killParkedRate?: number;
  /**
   * Sibling tasks of one owner all take the section's key (a multi-lock: the owner → members
   * plan is per owner; RedLock: holds are told apart by key only). Default: some take others.
   */
  readonly siblingsOnOneKey?: boolean;
  /** Databases the run needs (RedLock: several). Default 1. */
  readonly databases?: number;
  /** The keys whose state `state()` reports for a workload key (a multi-lock's members). */
  keysOf?(key: string): readonly string[];
  /**
   * The state of `keys` on the server, read through the fault-free observer in one script per
   * database (atomic): who holds each key, exclusively or shared, and who waits in its queue.
   */
  state(keys: readonly string[]): Promise<ReadonlyMap<string, KeyState>>;
  acquire(isolate: ChaosIsolate, key: string, plan: HoldPlan): Promise<ChaosHold | null>;
  /**
   * An administrator's `forceRelease()` of `key` through `isolate`'s (faulty) client, for kinds
   * that have one; `random` picks among its variants (a read-write lock's write lock or reads),
   * mostly the kind of hold the workload has in hand on `key` now (`heldAs`), as an operator
   * would force-release what they found stuck. Says what it targets before sending, and resolves
   * with whether it deleted a hold.
   */
  forceRelease?(
    isolate: ChaosIsolate,
    key: string,
    random: () => number,
    heldAs?: "exclusive" | "shared",
  ): { readonly target: ForceReleaseTarget; readonly done: Promise<boolean> };
  /**
   * Primitives over several databases (RedLock), whose releases and grants are per database:
   * the latest moment a copy of `owner`'s hold may still exist on any database. Every request
   * naming the owner that a database got counts as arming a lease of `leaseMs` from when that
   * database's answer came back (a release it refused or never got leaves its copy; a request
   * that ran late arms late). Infinity while such a request may still run.
   */
  copyBound?(owner: string, leaseMs: number): number;
  /**
   * The renewer of each isolate when holds are not renewed in the holder's process (the Durable
   * Object watchdog), and how the harness sees those renewals. Default: the in-process one.
   */
  renewal?(): { readonly inner: Renewer; readonly remote?: RemoteRenewals };
  /**
   * How much later than the confirmed end a lost hold's signal may abort, beyond the run's
   * `signalSlackMs`: the Durable Object watchdog tells the holder at its next heartbeat. Default 0.
   */
  readonly lossReportSlackMs?: number;
  /**
   * A read hold outside the sections (read-write kinds), in lease mode: the readers around a
   * parked writer (config.readersAroundWriterEveryMs).
   */
  readHold?(
    isolate: ChaosIsolate,
    key: string,
    owner: string,
    leaseMs: number,
    waitMs: number,
  ): Promise<{ release(): Promise<void> }>;
  /** Checks of the primitive's own (read after the run), beside the run's invariants. */
  checks?(run: Journal, harness: HarnessTiming): readonly InvariantResult[];
  /** Figures of the primitive's own machinery for the report (read after the run). */
  figures?(): Readonly<Record<string, number>>;
  /** Called once the run is over. */
  close?(): void;
  /** Whether `owner` holds `key` now, asked through the fault-free observer. */
  isHeldBy(key: string, owner: string): Promise<boolean>;
  /** Owners holding `key` now, asked through the fault-free observer. */
  holders(key: string): Promise<string[]>;
}

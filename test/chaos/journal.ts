/** What a chaos run records while it runs; the invariants are computed from it afterwards. */
import type { WriteStatus } from "./fenced-store.js";
import type { Sample } from "./server-state.js";

export type OperationKind = "acquire" | "tryAcquire" | "reenter" | "extend" | "release";

/** One critical section: when it ran and until when its holder could trust its hold. */
export interface SectionRecord {
  readonly key: string;
  readonly owner: string;
  readonly token: number | undefined;
  /**
   * Client time when the acquisition that led to the hold was called: the grant ran on the
   * server between then and `start`. Default `start`.
   */
  readonly requestedAt?: number;
  /** Client time when the hold was in hand. */
  readonly start: number;
  /** Client time when the section's work ended (its last write, or its crash). */
  readonly end: number;
  /**
   * min(end, the hold's validity as known at the end, the moment its signal aborted): the
   * interval [start, validEnd) is when the holder both believed it held the lock and its lease
   * had surely not expired. These intervals must not overlap beyond the primitive's capacity.
   */
  readonly validEnd: number;
  /** A shared (read) hold: overlaps other shared holds, never an exclusive one. */
  readonly shared?: boolean;
}

/** What the signal check needs of a section's hold. */
export interface HoldRecord {
  readonly keys: readonly string[];
  readonly owner: string;
  readonly shared: boolean;
  /** The hold's fencing token (exclusive holds of kinds that have one). */
  readonly token?: number | undefined;
  /** Lease or watchdog mode (of the outer hold). */
  readonly mode: "lease" | "watchdog";
  readonly start: number;
  readonly end: number;
  /**
   * `validUntil()` as the section began: at or before `start`, the hold came back after its
   * first lease (an answer slower than the lease or the watchdog timeout) and is lost on arrival.
   */
  readonly validAtStart: number;
  /** When its signal aborted (Infinity: never during the run). */
  readonly abortedAt: () => number;
  /** ChaosHold.confirmedDeadline(), read after the run. */
  readonly deadline: () => number;
}

/** One write the fenced store answered. */
export interface WriteRecord {
  readonly key: string;
  readonly owner: string;
  readonly token: number;
  readonly status: WriteStatus;
  readonly previousToken: number;
}

/** A fencing token in the hands of an owner. */
export interface TokenRecord {
  readonly key: string;
  readonly owner: string;
  readonly token: number;
}

/**
 * "release-left-copy": a release that succeeded on a majority of databases (RedLock) left a copy
 * on a database that refused, missed or outran it; that copy must end within its own bound.
 */
export type DeathCause =
  | "crash"
  | "acquire-failed"
  | "release-failed"
  | "release-left-copy"
  /** A push-mode waiter killed while parked: a hand-off may still reach its registration. */
  | "killed-parked"
  /** A late copy of an owner's request took a hold after its section (a sibling's) had ended. */
  | "late-copy"
  /**
   * An acquisition gave up and its leave was never answered: a release handed a hold to the
   * place and parked registration the leave may not have removed.
   */
  | "leave-unheard";

/** An administrator's force release: it took effect, if at all, between sent and settled. */
export interface ForceReleaseRecord {
  readonly keys: readonly string[];
  readonly holds: "exclusive" | "shared";
  readonly sentAt: number;
  /** Infinity when it never settled during the run (it may have run at any time after). */
  settledAt: number;
  /** True: it deleted a hold; false: nothing held; undefined: it failed (it may have run). */
  deleted: boolean | undefined;
}

/** How often the run met each pattern of the round-3 chaos. */
export interface PatternCounts {
  /** Sections run as several concurrent tasks of one owner (a request scope). */
  siblingGroups: number;
  siblingTasks: number;
  /** Sibling tasks holding while another task of their owner held too (same or other key). */
  siblingsHoldingTogether: number;
  /** Sibling tasks waiting (acquire in flight) while another task of their owner held. */
  siblingWaitsBesideAHold: number;
  /** Acquires given an AbortSignal, and those that ended aborted (LockAbortedError). */
  abortArmed: number;
  aborted: number;
  /** Waiters killed while parked (push kinds). */
  killedParked: number;
}

/** A holder that stopped without releasing; its lock must come free within its bound. */
export interface DeadHolderRecord {
  readonly key: string;
  readonly owner: string;
  readonly cause: DeathCause;
  readonly diedAt: number;
  /**
   * Its last (re)arming request settled + its lease: the hold must be gone by then. Final once
   * probing ended (a request in flight at the crash may still move it).
   */
  boundAt: number;
  /** Send time of the last probe that still found it held (null if none did). */
  lastSeenHeldAt: number | null;
  /** When a probe first found it free (null if none did before probing stopped). */
  freedAt: number | null;
  /** For one seen held past its bound: the owner's requests, for the report. */
  context?: string;
}

/**
 * One `acquire` that waited (not a `tryAcquire`, not a re-entry): from the call until it returned,
 * and until when it was owed the lock — its isolate did not kill it, its signal had not fired.
 */
export interface WaitRecord {
  /** The workload key, which is also the key of its state readings (single-key kinds). */
  readonly key: string;
  readonly owner: string;
  readonly isolate: number;
  readonly shared: boolean;
  readonly startedAt: number;
  /** When the call returned (Infinity: never during the run). */
  endedAt: number;
  /** When its signal fired (a scope task that gave up), if it did before the call returned. */
  abortedAt: number;
  /** The token of the hold the call returned, if it returned one. */
  token: number | undefined;
  /** Permits it asked for (semaphores; default 1). */
  readonly permits?: number;
  /** How long it was allowed to wait, in ms. */
  readonly waitMs?: number;
  /** The name of the error it threw, if it threw one. */
  error?: string;
}

/**
 * Something that may keep a free key idle while its waiters wait, as the docs allow: a fault on
 * a waiter's word, stream or request, a waiter killed while parked, a latency spike. A free key
 * with a live waiter may stay idle until `until` (+ the base bound), no longer.
 */
export interface LivenessExcuse {
  /** The workload key it concerns; undefined: every key (a spike). */
  readonly key: string | undefined;
  readonly at: number;
  readonly until: number;
  readonly what: string;
  /**
   * Whose wait it slows, when it is one waiter's (its word, its request) or one isolate's (its
   * stream): it excuses a stretch only if such a waiter was live in it. Neither: any waiter's (a
   * dead waiter's registration, a spike).
   */
  readonly owner?: string;
  readonly isolate?: number;
}

/** A release sequence that ended cleanly, and what the fault-free observer saw right after. */
export interface ReleaseCheck {
  readonly key: string;
  readonly owner: string;
  readonly stillHeld: boolean;
  /** What the owner went through, for the report of a drift (scope siblings, aborts, copies). */
  readonly context?: string;
}

export class Journal {
  readonly sections: SectionRecord[] = [];
  readonly writes: WriteRecord[] = [];
  readonly tokens: TokenRecord[] = [];
  readonly dead: DeadHolderRecord[] = [];
  readonly releaseChecks: ReleaseCheck[] = [];
  readonly forceReleases: ForceReleaseRecord[] = [];
  readonly waits: WaitRecord[] = [];
  readonly excuses: LivenessExcuse[] = [];
  readonly patterns: PatternCounts = {
    siblingGroups: 0,
    siblingTasks: 0,
    siblingsHoldingTogether: 0,
    siblingWaitsBesideAHold: 0,
    abortArmed: 0,
    aborted: 0,
    killedParked: 0,
  };
  /** Readings of the server: the sampler's and the probes taken right after each grant. */
  readonly samples: Sample[] = [];
  readonly holds: HoldRecord[] = [];
  /** The keys each owner asked for (a multi-lock's members), whatever the client answered. */
  readonly planned = new Map<string, readonly string[]>();
  /** Lock operations started, by kind. */
  readonly operations: Record<OperationKind, number> = {
    acquire: 0,
    tryAcquire: 0,
    reenter: 0,
    extend: 0,
    release: 0,
  };
  /** How operations ended: "ok", "null" (busy), or the error's name. */
  readonly outcomes = new Map<string, number>();
  /** Operations that ended with something other than a result or an edgelock error. */
  readonly untypedErrors: string[] = [];
  /** Operations still pending after `hangAfterMs`. */
  hung = 0;
  /** Error messages, causes and events that contained the REST token. */
  readonly secretLeaks: string[] = [];
  /** Resource (fenced store) requests that failed even after re-tries. */
  resourceErrors = 0;
  /** Sections in which a re-entry found the outer hold already gone. */
  reentriesAfterLoss = 0;
  /**
   * The acquisitions `waits` leaves out, timed: re-entries (one that found its hold gone waits as
   * a new acquisition of the same owner) and tries (a try may wait up to a lease). Each queues
   * with a place, a park and a grant of its own, beside any other wait of that owner.
   */
  readonly sideAcquisitions: {
    readonly key: string;
    readonly owner: string;
    readonly startedAt: number;
    endedAt: number;
  }[] = [];
  /** Events the clients emitted, by type. */
  readonly events = new Map<string, number>();
  /** Lock handles whose signal aborted during the section. */
  lostDuringSection = 0;
  unhandledRejections = 0;

  get totalOperations(): number {
    return Object.values(this.operations).reduce((sum, count) => sum + count, 0);
  }

  count(map: Map<string, number>, key: string): void {
    map.set(key, (map.get(key) ?? 0) + 1);
  }
}

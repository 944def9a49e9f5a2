/**
 * The JSON of `GET …/api/snapshot` and `…/api/waits`. Owner tokens never leave the server (whoever knows one may
 * release its holds): holders and waiters carry a short digest instead.
 */
import type { WaitWhy } from "../events.js";

/** Who may do what through the inspector: `"none"` is refused with 403. */
export type InspectorAccess = "write" | "read" | "none";

/** One holder of an exclusive lock (or the write side of a read-write lock). */
export interface InspectedHolder {
  /** First 12 hex digits of SHA-256 of the owner token: the same owner reads the same here. */
  readonly owner: string;
  /** Re-entrant holds of this owner (the hash field's count). */
  readonly holds: number;
}

/** One read hold of a read-write lock. */
export interface InspectedReadHold {
  readonly owner: string;
  /** Time left of this read hold's lease, ms, when the snapshot was taken. */
  readonly leaseLeftMs: number;
}

/** One waiting acquisition in a lock's queue. */
export interface InspectedWaiter {
  /** 1 is the head of the queue. */
  readonly position: number;
  readonly owner: string;
  /**
   * Digest of the queue member (`<owner> <operation id>`): names this acquisition in
   * `remove-waiter` without sending the owner token to the browser.
   */
  readonly waiter: string;
  /** Server time (ms since the epoch) it joined the queue (its ticket). */
  readonly waitingSince: number;
  /** ms until its deadline passes unless it polls again (the queue drops it then); null: none. */
  readonly deadlineInMs: number | null;
  /** `parked`: blocked on its wake list (push mode); `polling`: asks again on its own. */
  readonly mode: "parked" | "polling";
}

/** One lock as the inspector shows it: its state, holders and queue. */
export interface InspectedLock {
  readonly name: string;
  /** `lock`: reentrant or fair (same key layout); `read-write`: read holds or waiting writers. */
  readonly kind: "lock" | "read-write";
  /** `held`, `waiting` (queue but no holder: a hand-off is under way), or `free`. */
  readonly state: "held" | "waiting" | "free";
  readonly holders: readonly InspectedHolder[];
  /** ms left of the lease when the snapshot was taken; null when not held or never expiring. */
  readonly leaseLeftMs: number | null;
  /** The last fencing token handed out (the fence counter); null if the lock was never held. */
  readonly fencingToken: number | null;
  /** Server time the current holder first acquired it, when the scripts recorded it. */
  readonly heldSince: number | null;
  /** The scripts' running averages (ms) of hold time and acquire-to-acquire cycle, if kept. */
  readonly averageHoldMs: number | null;
  readonly averageCycleMs: number | null;
  readonly readHolds: readonly InspectedReadHold[];
  /** Read holds in all (`readHolds` lists at most `maxListed`). */
  readonly readHoldCount: number;
  readonly waiters: readonly InspectedWaiter[];
  /** Waiters in all (`waiters` lists at most `maxListed`). */
  readonly waiterCount: number;
  /** Waiting writers of a read-write lock (they hold back new readers). */
  readonly waitingWriters: number;
}

/** One live hold of a semaphore: an acquisition's permits, with their own lease and token. */
export interface InspectedPermitHold {
  /** First 12 hex digits of SHA-256 of the owner token, as for a lock's holder. */
  readonly owner: string;
  readonly permits: number;
  /** This hold's fencing token (every hold has its own). */
  readonly fencingToken: number;
  /** ms left of this hold's lease when the snapshot was taken (server time). */
  readonly leaseLeftMs: number;
  /**
   * Server time the hold was granted; null where unknown: a hold taken while nothing else was
   * held or waited for (its script reads no clock).
   */
  readonly heldSince: number | null;
}

/** One live waiting acquisition of a semaphore (parked or polling: not told apart here). */
export interface InspectedPermitWaiter {
  /** 1 is the head of the queue (first come, first served). */
  readonly position: number;
  readonly owner: string;
  /** Permits it asks for: reserved ahead of everyone behind it. */
  readonly permits: number;
  /** Server time (ms since the epoch) it joined the queue (its ticket). */
  readonly waitingSince: number;
  /** ms until its deadline passes unless it polls again (the next attempt drops it then). */
  readonly deadlineInMs: number;
}

/** A counting semaphore (`client.semaphore(name)`): its capacity and who has its permits. */
export interface InspectedSemaphore {
  readonly name: string;
  /** `held` (a live hold), `waiting` (waiters, no hold) or `free`. */
  readonly state: "held" | "waiting" | "free";
  /** Total permits; null when none is set (acquisitions fail until one is). */
  readonly capacity: number | null;
  /** Capacity less the permits of live holds, at least 0: what `state().available` answers. */
  readonly available: number;
  /** Permits of the live holds. */
  readonly heldPermits: number;
  /** Live holds, the soonest lease end first; a hold whose lease has passed is none. */
  readonly holds: readonly InspectedPermitHold[];
  /** Live holds in all (`holds` lists at most `maxListed`). */
  readonly holdCount: number;
  /** Live waiters in queue order; one past its deadline reserves nothing and is none. */
  readonly waiters: readonly InspectedPermitWaiter[];
  /** Live waiters in all (`waiters` lists at most `maxListed`). */
  readonly waiterCount: number;
  /** The last fencing token handed out; null if no hold was ever granted. */
  readonly fencingToken: number | null;
  /** The running average ms from grant to release, once releases recorded it. */
  readonly averageHoldMs: number | null;
}

/** A count-down latch (`client.countDownLatch(name)`) that is not open yet. */
export interface InspectedLatch {
  readonly name: string;
  /** What is left to count down (above 0: an open latch has no key and is not listed). */
  readonly count: number;
  /** ms until the latch expires (and reads as open) when the snapshot was taken; null: never. */
  readonly ttlLeftMs: number | null;
}

/** What one refresh cost: every command is billed by Upstash. */
export interface RefreshCost {
  readonly scan: number;
  /**
   * Reads of locks, semaphores and latches: one read-only script each (two when Redis had lost
   * the script).
   */
  readonly read: number;
  readonly total: number;
}

/** What one refresh read: every lock, semaphore and latch under the prefix, and what it cost (what `edgelock inspect --json` prints). */
export interface InspectorSnapshot {
  /** Server time of the snapshot, ms since the epoch (the first lock read's `TIME`, else local). */
  readonly takenAt: number;
  readonly prefix: string;
  /** Whether the force-release and remove-waiter actions are offered to this caller. */
  readonly canWrite: boolean;
  /** Why the actions are not offered, when they are not. */
  readonly readOnlyReason: string | null;
  /**
   * Why the view may be behind the primary (the `globalDatabase` option: a read region may not
   * have the latest writes yet), or null.
   */
  readonly lagNote: string | null;
  readonly locks: readonly InspectedLock[];
  /** Semaphores with a hold or a waiter, and those named (where they exist). */
  readonly semaphores: readonly InspectedSemaphore[];
  /** Latches not yet open. */
  readonly latches: readonly InspectedLatch[];
  /**
   * Names with keys but none in use (only a fence, a semaphore's capacity, statistics or
   * records left): names only, not read (a command each).
   */
  readonly idle: readonly string[];
  readonly idleCount: number;
  /**
   * Locks, semaphores and latches not read because of `maxLocks`: found active, or named (a name
   * is read as up to three kinds, and named reads come first).
   */
  readonly notShown: number;
  readonly scan: {
    /** The cursor to continue from (`?cursor=`), "0" when the walk of the key space ended. */
    readonly cursor: string;
    readonly complete: boolean;
    /** Keys matching edgelock's pattern that this refresh saw. */
    readonly keysSeen: number;
    /** Why SCAN was not used (a read-only token refuses it), when it was not. */
    readonly refused: string | null;
  };
  readonly cost: RefreshCost;
}

/** One step of a recent wait: an attempt's answer and the sleep chosen after it (`waitStep`). */
export interface RecentWaitStep {
  /** 1 is the first attempt; a gap in the numbers is where `droppedSteps` were left out. */
  readonly attempt: number;
  readonly answer: "acquired" | "busy" | "failed";
  /** The request's round trip, ms (a park: how long it waited). */
  readonly durationMs: number;
  readonly holderTtlMs: number | null;
  /** The sleep before the next attempt, ms (0 on the last step). */
  readonly delayMs: number;
  /** Why that sleep (`WaitWhy`: turn, leaseEnd, backoff, park, permits, outage, deadline). */
  readonly why: WaitWhy | null;
}

/** One finished wait of the recording client: how it ended and its steps. */
export interface RecentWait {
  /** The wait's number in its client (`waitId` of its events). */
  readonly id: number;
  readonly name: string;
  /** `acquired`, or `notAcquired` with its `reason`. */
  readonly outcome: "acquired" | "notAcquired";
  /** `busy` (the wait ran out) or the error's name, when not acquired; else null. */
  readonly reason: string | null;
  /** A release handed it the lock (push). */
  readonly handOff: boolean;
  /** Local time it ended, ms since the epoch (the recorder's clock, as `takenAt`). */
  readonly endedAt: number;
  readonly waitedMs: number;
  /** Attempts sent (a park not counted). */
  readonly requests: number;
  /** The first and the last steps when there were more than `maxSteps`. */
  readonly steps: readonly RecentWaitStep[];
  /** Steps left out between the first and the last kept. */
  readonly droppedSteps: number;
}

/**
 * The JSON of `GET …/api/waits`: the recent waits of the client the inspector was given a
 * recorder of (`recentWaits` option), newest first; `recording: false` without one.
 */
export type InspectedWaits =
  | { readonly recording: false }
  | {
      readonly recording: true;
      /** Local time of this answer, ms since the epoch (the clock of `endedAt`). */
      readonly takenAt: number;
      /** Waits kept at most, and steps kept per wait. */
      readonly maxWaits: number;
      readonly maxSteps: number;
      readonly waits: readonly RecentWait[];
    };

/**
 * The JSON of `GET …/api/snapshot`. Owner tokens never leave the server (whoever knows one may
 * release its holds): holders and waiters carry a short digest instead.
 */

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

/** What one refresh cost: every command is billed by Upstash. */
export interface RefreshCost {
  readonly scan: number;
  /** Per-lock reads: one read-only script each (two when Redis had lost the script). */
  readonly read: number;
  readonly total: number;
}

export interface InspectorSnapshot {
  /** Server time of the snapshot, ms since the epoch (the first lock read's `TIME`, else local). */
  readonly takenAt: number;
  readonly prefix: string;
  /** Whether the force-release and remove-waiter actions are offered to this caller. */
  readonly canWrite: boolean;
  /** Why the actions are not offered, when they are not. */
  readonly readOnlyReason: string | null;
  readonly locks: readonly InspectedLock[];
  /** Locks with no active keys left: names only, not read (a command each). */
  readonly idle: readonly string[];
  readonly idleCount: number;
  /** Locks found active but not read because of `maxLocks`. */
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

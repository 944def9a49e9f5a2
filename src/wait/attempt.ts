/**
 * What one attempt of an acquisition answers and what it knows of its wait: the contract between
 * the shared acquisition flow (acquire.ts) and the attempts of each kind, parking included.
 * Its own module so that what attempts import does not lead back to the flow.
 */
import type { WaitPolicy } from "./policy.js";
import type { TurnView } from "./turn.js";

/**
 * A release handed the lock over (push mode): the lease the hand-off granted (the claim window,
 * or the waiter's own lease if shorter) and the earliest moment, on this clock, the grant can
 * have been made.
 */
export interface HandOff {
  readonly leaseMs: number;
  readonly grantedAt: number;
}

/** The result of one attempt at the server. */
export type AttemptOutcome =
  | {
      readonly kind: "acquired";
      readonly fencingToken: number;
      /** Set when a release handed the lock over (push mode). */
      readonly handOff?: HandOff;
    }
  | {
      readonly kind: "busy";
      /** The holder's remaining lease, bounding the next poll (null when unknown). */
      readonly holderTtlMs: number | null;
      /** When the server knows better (e.g. a queue position), the delay before the next poll. */
      readonly nextPollMs?: number;
      /**
       * The script answered that an earlier attempt of this operation id acquired and that hold
       * is gone since ({-1}): the id is spent, the next attempt takes a new one.
       */
      readonly operationSpent?: boolean;
    };

/**
 * An attempt's outcome; a busy one carries the waiter's view of its turn. `refused`: the script
 * turned this owner away at once (the write lock's upgrade) and queued nothing; the acquisition
 * ends with `error`.
 */
export type QueuedAttemptOutcome =
  | { readonly kind: "acquired"; readonly fencingToken: number }
  | { readonly kind: "refused"; readonly error: Error }
  | {
      readonly kind: "busy";
      readonly holderTtlMs: number | null;
      readonly queue: TurnView;
      readonly operationSpent?: boolean;
    };

/** How one attempt waits if it finds the lock busy. */
export interface WaiterTerms {
  /**
   * The waiter's place lasts this long without a poll; 0 for a single attempt, which never
   * enqueues; -1 for the last attempt a poll budget allows, which leaves the queue if it finds
   * the lock busy (so that giving up costs no request of its own).
   */
  readonly timeoutMs: number;
  /** This waiter's last round trip (0: unknown), which sizes reservations. */
  readonly roundTripMs: number;
  /** Push mode: the claim window of a waiter that will park after a busy reply; 0: it polls. */
  readonly claimMs: number;
  /** Push mode: the waiter's park was sent beside this attempt and is in flight. */
  readonly parkBeside?: boolean;
}

/** The hold a renewal acts on. */
export interface RenewedHold {
  readonly fencingToken: number;
  readonly claim?: { readonly claimMs: number; readonly grantLeaseMs: number };
}

/** What one acquisition call will do. */
export interface WaitPlan {
  /** How long to keep trying after the first attempt (0: one attempt; Infinity: no limit). */
  readonly waitMs: number;
  /** False for a single attempt: it must never enqueue. */
  readonly mayWait: boolean;
  /** The hold's lease: the caller's, or the watchdog's when `renewing`. */
  readonly leaseMs: number;
  /** Watchdog mode: no `leaseMs` was given, and the hold is renewed while held. */
  readonly renewing: boolean;
  /** The caller's signal: a park in flight stops waiting when it aborts. */
  readonly signal: AbortSignal | undefined;
  /** When the wait ends (client clock; Infinity: no limit). */
  readonly deadline: number;
  readonly owner: string;
  /** The call's `wait` over the client's. */
  readonly policy: WaitPolicy;
}

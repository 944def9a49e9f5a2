/**
 * The contract between the shared acquisition flow and each kind's attempts; its own module so
 * that what attempts import does not lead back to the flow.
 */
import type { WaitWhy } from "../events.js";
import type { WaitPolicy } from "./policy.js";
import type { TurnView } from "./poll.js";

/**
 * A push hand-off: the lease granted (the claim window, or the waiter's lease if shorter) and the
 * earliest moment, client clock, the grant can have been made.
 */
export interface HandOff {
  readonly leaseMs: number;
  readonly grantedAt: number;
  /**
   * Told by word over a subscription: the grant's record stays in the parked hash until
   * the hold's release clears it (clearGrantRecord in hold/queue/hand-off.ts).
   */
  readonly recorded?: true;
}

export type AttemptOutcome =
  | {
      readonly kind: "acquired";
      readonly fencingToken: number;
      readonly handOff?: HandOff;
    }
  | {
      readonly kind: "busy";
      /** Bounds the next poll. */
      readonly holderTtlMs: number | null;
      /** When the server knows better (a queue position). */
      readonly nextPollMs?: number;
      /** Why `nextPollMs` is what it is (the wait's trace). */
      readonly why?: WaitWhy;
      /** An earlier attempt of this id acquired and that hold is gone ({-1}): take a new id. */
      readonly operationSpent?: boolean;
    };

/** `refused`: turned away at once, queued nothing (the write lock's upgrade); ends with `error`. */
export type QueuedAttemptOutcome<View extends TurnView = TurnView> =
  | { readonly kind: "acquired"; readonly fencingToken: number }
  | { readonly kind: "refused"; readonly error: Error }
  | {
      readonly kind: "busy";
      readonly holderTtlMs: number | null;
      readonly queue: View;
      readonly operationSpent?: boolean;
    };

export interface WaiterTerms {
  /**
   * How long the place lasts without a poll; 0: a single attempt, never enqueued; -1: the
   * budget's last, which leaves the queue if busy (giving up costs no request of its own).
   */
  readonly timeoutMs: number;
  /** 0: unknown; sizes reservations. */
  readonly roundTripMs: number;
  /** Push mode; 0: it polls. */
  readonly claimMs: number;
  /** Push mode: the park is in flight beside this attempt. */
  readonly parkBeside?: boolean;
  /**
   * Push mode: how a hand-off reaches this waiter, a blocking pop on its own wake list or the
   * lock's hand-off channel it is subscribed to (see queue/hand-off.ts). Unset: a pop.
   */
  readonly wakeBy?: "pop" | "sub";
  /** A subscribed waiter: this attempt's number, which a grant's word names to be timed from. */
  readonly registration?: number;
  /** A subscribed waiter: the shard of the lock's hand-off channels it listens on. */
  readonly shard?: number;
}

export interface RenewedHold {
  readonly fencingToken: number;
  readonly claim?: { readonly claimMs: number; readonly grantLeaseMs: number };
}

/** What one acquisition call will do. */
export interface WaitPlan {
  readonly waitMs: number;
  /** False for a single attempt: it must never enqueue. */
  readonly mayWait: boolean;
  /** The caller's, or the watchdog's when `renewing`. */
  readonly leaseMs: number;
  /** Watchdog mode. */
  readonly renewing: boolean;
  readonly signal: AbortSignal | undefined;
  /** Client clock; Infinity: no limit. */
  readonly deadline: number;
  readonly owner: string;
  /** The call's `wait` over the client's. */
  readonly policy: WaitPolicy;
}

/**
 * What one attempt of an acquisition answers and what it knows of its wait: the contract between
 * the shared acquisition flow (acquisition.ts) and the attempts of each kind, parking included.
 * Its own module so that what attempts import does not lead back to the flow.
 */
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

/** What an attempt may know of the wait it is part of (push mode parks within it). */
export interface AttemptWait {
  /** The caller's signal: a park in flight stops waiting when it aborts. */
  readonly signal: AbortSignal | undefined;
  /** When the wait ends (client clock; Infinity: no limit). */
  readonly deadline: number;
}

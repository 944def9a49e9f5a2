/** Events a LockClient emits, so that no failure of a held lock is silent. */

/**
 * Why a wait sleeps as long as it does (`waitStep`): `turn` — until its expected turn in the
 * lock's queue (from its place and the lock's learnt holds); `leaseEnd` — until the holder's
 * lease ends; `backoff` — nothing known: the jittered backoff, growing with the time waited;
 * `park` — push: parked until woken, or asking again at once after a park; `permits` — a
 * semaphore: until the permits it lacks are expected back; `outage` — a transient failure ridden
 * out; `deadline` — the wait's own end.
 */
export type WaitWhy = "turn" | "leaseEnd" | "backoff" | "park" | "permits" | "outage" | "deadline";

/** An event a LockClient emits (`client.on(type, listener)`). */
export type LockEvent =
  /**
   * A held lock was lost: renewal found it gone or taken, or failed until its lease passed;
   * `extend()`, `release()` or the disposer found it gone; or the disposer's release failed.
   */
  | { type: "lockLost"; name: string; owner: string; reason: string; cause?: unknown }
  /** One renewal request failed; the watchdog retries until the lease would have passed. */
  | { type: "renewalFailed"; name: string; owner: string; error: unknown }
  /**
   * An acquisition took the lock (plain, fair, read or write lock). `waitedMs`: from the call
   * to the hold, waiting included; `requests`: the attempts it sent (push-mode parks and the
   * Redis client's own re-sends not counted); `handOff`: a release handed it the lock (push);
   * `waitId`: the wait's number in this client, as in its `waitStep`s.
   */
  | {
      type: "acquired";
      name: string;
      waitId: number;
      fencingToken: number;
      waitedMs: number;
      requests: number;
      handOff: boolean;
    }
  /**
   * An acquisition ended without the lock: `reason` is `busy` (tryAcquire, or the wait ran
   * out) or the error's name (LockAbortedError, LockBudgetExceededError, LockBackendError…);
   * `waitId` as in `acquired`.
   */
  | {
      type: "notAcquired";
      name: string;
      waitId: number;
      waitedMs: number;
      requests: number;
      reason: string;
    }
  /**
   * One step of a wait, for tracing "why did my acquire sleep 80 ms?" (lock, fair lock, read and
   * write locks, semaphore): attempt `attempt` (1 first) answered `answer` after `durationMs`
   * (a park: how long it waited), and the wait sleeps `delayMs` before the next one, because of
   * `why`. `answer` is `acquired` on the last step (then `delayMs` is 0). Built only while a
   * listener is subscribed. `waitId` numbers the waits of this client (1, 2, …; no secret): the
   * steps of concurrent waits on one name, and their `acquired` or `notAcquired`, share it.
   */
  | {
      type: "waitStep";
      name: string;
      waitId: number;
      attempt: number;
      answer: "acquired" | "busy" | "failed";
      durationMs: number;
      holderTtlMs: number | null;
      delayMs: number;
      why: WaitWhy | null;
    }
  /** The watchdog re-armed a hold's lease; `durationMs`: that request's round trip. */
  | { type: "renewed"; name: string; fencingToken: number; durationMs: number }
  /**
   * A release request answered: `heldMs` from acquisition to this answer, `durationMs` the
   * request's round trip, `released` false when the hold was already gone.
   */
  | {
      type: "released";
      name: string;
      fencingToken: number;
      heldMs: number;
      durationMs: number;
      released: boolean;
    };

/** The `type` of a LockEvent: what `client.on(type, listener)` listens to. */
export type LockEventType = LockEvent["type"];
/** A listener of `client.on(type, listener)`: receives the events of that type. */
export type LockEventListener<T extends LockEventType> = (
  event: Extract<LockEvent, { type: T }>,
) => void;

export class LockEvents {
  private readonly listeners = new Map<LockEventType, Set<(event: LockEvent) => void>>();
  private waitsStarted = 0;

  /** The `waitId` of a wait that starts: this client's count of them, never a secret. */
  newWaitId(): number {
    this.waitsStarted += 1;
    return this.waitsStarted;
  }

  /** Subscribes; returns the function that unsubscribes. */
  on<T extends LockEventType>(type: T, listener: LockEventListener<T>): () => void {
    const set = this.listeners.get(type) ?? new Set();
    const wrapped = listener as (event: LockEvent) => void;
    set.add(wrapped);
    this.listeners.set(type, set);
    return () => set.delete(wrapped);
  }

  /** Someone listens to `type`: an event that costs work to build is built only then. */
  listens(type: LockEventType): boolean {
    return (this.listeners.get(type)?.size ?? 0) > 0;
  }

  emit(event: LockEvent): void {
    for (const listener of this.listeners.get(event.type) ?? []) {
      // A throwing listener must not stop the watchdog or the other listeners.
      try {
        listener(event);
      } catch {}
    }
  }
}

/**
 * Every event type a listener that records them all (edgelock/metrics) subscribes to; not
 * `waitStep`, the trace, which is a step of a wait and is built only for those who ask for it.
 */
export const LOCK_EVENT_TYPES: readonly LockEventType[] = [
  "acquired",
  "notAcquired",
  "renewed",
  "renewalFailed",
  "released",
  "lockLost",
];

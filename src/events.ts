/** Events a LockClient emits, so that no failure of a held lock is silent. */

export type LockEvent =
  /**
   * A held lock was lost: renewal found it gone or taken, or failed until its lease passed;
   * `extend()`, `release()` or the disposer found it gone; or the disposer's release failed.
   */
  | { type: "lockLost"; name: string; owner: string; reason: string; cause?: unknown }
  /** One renewal request failed; the watchdog retries until the lease would have passed. */
  | { type: "renewalFailed"; name: string; owner: string; error: unknown };

export type LockEventType = LockEvent["type"];
export type LockEventListener<T extends LockEventType> = (
  event: Extract<LockEvent, { type: T }>,
) => void;

export class LockEvents {
  private readonly listeners = new Map<LockEventType, Set<(event: LockEvent) => void>>();

  /** Subscribes; returns the function that unsubscribes. */
  on<T extends LockEventType>(type: T, listener: LockEventListener<T>): () => void {
    const set = this.listeners.get(type) ?? new Set();
    const wrapped = listener as (event: LockEvent) => void;
    set.add(wrapped);
    this.listeners.set(type, set);
    return () => set.delete(wrapped);
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

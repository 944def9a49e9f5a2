/** What lock operations of every kind report. */

/** What one request reads of a lock: held or not, remaining lease, holds. */
export interface LockState {
  locked: boolean;
  /** Remaining lease in ms; null when not locked (or the key has no expiry). */
  ttlMs: number | null;
  /** Holds of the owner asked about, or of every holder when none was named. */
  holds: number;
}

/** What releasing one hold did. */
export type ReleaseResult =
  | { readonly released: true; holdsLeft: number }
  | { readonly released: false };

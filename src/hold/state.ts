/** What one request reads of a lock. */
export interface LockState {
  locked: boolean;
  /** Null when not locked (or the key has no expiry). */
  ttlMs: number | null;
  /** Holds of the owner asked about, or of every holder when none was named. */
  holds: number;
}

export type ReleaseResult =
  | { readonly released: true; holdsLeft: number }
  | { readonly released: false };

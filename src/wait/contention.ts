/**
 * Where a client recently had to wait, per lock key. In push mode an acquisition on such a key
 * sends its park beside its first attempt instead of after the busy reply, which takes a round
 * trip off every contended hand-off. Once acquisitions found the key free at their first ask
 * FREE_ASKS_TO_FORGET times in a row, it is forgotten, so that a lock no longer contended costs one
 * request again (between two contenders, one finds the lock free now and then: not enough).
 */

/** A key counts as contended this long after a wait on it (ms). */
export const CONTENTION_MEMORY_MS = 10_000;
/** Free first asks in a row after which a key is no longer counted as contended. */
export const FREE_ASKS_TO_FORGET = 2;
/** At most this many keys are remembered; the oldest goes first. */
const CONTENTION_MEMORY_KEYS = 256;

interface Seen {
  /** When a wait on the key was last seen (client clock). */
  readonly at: number;
  /** Acquisitions since then that found the key free at their first ask. */
  freeAsks: number;
}

export class RecentContention {
  // In insertion order, oldest first.
  readonly #seen = new Map<string, Seen>();

  /** Notes a wait on `key`. */
  saw(key: string, now: number = Date.now()): void {
    this.#seen.delete(key);
    this.#seen.set(key, { at: now, freeAsks: 0 });
    if (this.#seen.size > CONTENTION_MEMORY_KEYS) {
      const oldest = this.#seen.keys().next().value;
      if (oldest !== undefined) this.#seen.delete(oldest);
    }
  }

  /** Whether a wait on `key` was seen within CONTENTION_MEMORY_MS. */
  likely(key: string, now: number = Date.now()): boolean {
    const seen = this.#seen.get(key);
    if (seen === undefined) return false;
    if (now - seen.at < CONTENTION_MEMORY_MS) return true;
    this.#seen.delete(key);
    return false;
  }

  /** Notes an acquisition that found `key` free at its first ask. */
  freeAtFirstAsk(key: string): void {
    const seen = this.#seen.get(key);
    if (seen === undefined) return;
    seen.freeAsks += 1;
    if (seen.freeAsks >= FREE_ASKS_TO_FORGET) this.#seen.delete(key);
  }
}

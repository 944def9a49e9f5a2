/** What one client's push-mode acquisitions share (one of each on its runtime). */

/**
 * Whether the backend's pops block; Upstash's REST API's do not (docs/push.md). Learnt once per
 * client from the first park that shows it; push mode then polls.
 */
export class BlockingPops {
  #served = true;

  get served(): boolean {
    return this.#served;
  }

  notServed(): void {
    this.#served = false;
  }
}

export interface SiblingWatch {
  readonly held: Promise<undefined>;
  readonly leave: () => void;
}

/**
 * Parked acquisitions per (lock, owner): when a hand-off reaches one, the lock is the others'
 * too (re-entry), and `held` makes them ask again rather than wait for a hand-off of their own.
 */
export class ParkedSiblings {
  readonly #parked = new Map<string, Set<() => void>>();

  /** Returns the function that removes `nudge`. */
  join(lockKey: string, owner: string, nudge: () => void): () => void {
    const id = `${lockKey}\n${owner}`;
    let nudges = this.#parked.get(id);
    if (nudges === undefined) {
      nudges = new Set();
      this.#parked.set(id, nudges);
    }
    const joined = nudges;
    joined.add(nudge);
    return () => {
      joined.delete(nudge);
      if (joined.size === 0 && this.#parked.get(id) === joined) this.#parked.delete(id);
    };
  }

  /**
   * Joins the acquisitions of `owner` parked on `lockKey`: `held` settles once one of the
   * others holds the lock (re-entry), until `leave`.
   */
  watch(lockKey: string, owner: string): SiblingWatch {
    let nudge = () => {};
    const held = new Promise<undefined>((resolve) => {
      nudge = () => resolve(undefined);
    });
    return { held, leave: this.join(lockKey, owner, nudge) };
  }

  held(lockKey: string, owner: string): void {
    for (const nudge of this.#parked.get(`${lockKey}\n${owner}`) ?? []) nudge();
  }
}

/*
 * Where the client recently waited: push mode parks beside the first attempt there, a round
 * trip off every contended hand-off. FREE_ASKS_TO_FORGET free first asks in a row forget the
 * key, so an uncontended lock costs one request again (two contenders see it free now and then).
 */

/** A key counts as contended this long after a wait on it. */
export const CONTENTION_MEMORY_MS = 10_000;
export const FREE_ASKS_TO_FORGET = 2;
/** The oldest goes first. */
const CONTENTION_MEMORY_KEYS = 256;

interface Seen {
  readonly at: number;
  /** Acquisitions since then that found the key free at their first ask. */
  freeAsks: number;
}

export class RecentContention {
  // Oldest first.
  readonly #seen = new Map<string, Seen>();

  saw(key: string, now: number = Date.now()): void {
    this.#seen.delete(key);
    this.#seen.set(key, { at: now, freeAsks: 0 });
    if (this.#seen.size > CONTENTION_MEMORY_KEYS) {
      const oldest = this.#seen.keys().next().value;
      if (oldest !== undefined) this.#seen.delete(oldest);
    }
  }

  likely(key: string, now: number = Date.now()): boolean {
    const seen = this.#seen.get(key);
    if (seen === undefined) return false;
    if (now - seen.at < CONTENTION_MEMORY_MS) return true;
    this.#seen.delete(key);
    return false;
  }

  freeAtFirstAsk(key: string): void {
    const seen = this.#seen.get(key);
    if (seen === undefined) return;
    seen.freeAsks += 1;
    if (seen.freeAsks >= FREE_ASKS_TO_FORGET) this.#seen.delete(key);
  }
}

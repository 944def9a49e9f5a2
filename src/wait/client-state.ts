/**
 * What one client's push-mode acquisitions share (the client keeps one of each on its runtime):
 * where it recently had to wait, whether its backend's pops block, and its parked acquisitions
 * per lock and owner.
 */

/**
 * Whether this client's backend serves blocking pops. Production Upstash's REST API does not
 * (its docs: "Blocking commands … are not supported"): a `BLPOP` there answers at once as if
 * timed out, or is refused. Learnt once per client from the first park that shows it; from then
 * on push mode waits by polling, and no acquisition registers as parked.
 */
export class BlockingPops {
  #served = true;

  /** False once a park came back long before its timeout with nothing, or was refused. */
  get served(): boolean {
    return this.#served;
  }

  /** A park showed that pops do not block here. */
  notServed(): void {
    this.#served = false;
  }
}

/**
 * This client's parked acquisitions per (lock, owner). A release hands the lock to one of an
 * owner's concurrent acquisitions (each has its own registration); the lock is then the others'
 * too (re-entry). `held` tells them, and they ask again at once instead of waiting for a hand-off
 * of their own.
 */
export class ParkedSiblings {
  readonly #parked = new Map<string, Set<() => void>>();

  /** Adds `nudge` to (lockKey, owner); returns the function that removes it. */
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

  /** `owner` holds `lockKey` now: every parked acquisition of it here asks again. */
  held(lockKey: string, owner: string): void {
    for (const nudge of this.#parked.get(`${lockKey}\n${owner}`) ?? []) nudge();
  }
}

/*
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

/**
 * What one RedLock acquisition holds, and until when it is trusted. Grants that arrive after the
 * attempt was won are adopted while the hold lasts, and undone once it is released.
 */
import type { DatabaseVote } from "./acquire.js";
import type { Database } from "./databases.js";
import type { RedLockSettings } from "./options.js";
import { undoAcquire } from "./undo.js";

export interface HeldDatabase {
  readonly db: Database;
  /** Its database's own counter, unrelated to the others'. */
  readonly fencingToken: number;
}

/** In flight when the attempt was won; `answer` is undefined when it failed. */
export interface LateAnswer {
  readonly db: Database;
  readonly operationId: string;
  readonly answer: Promise<DatabaseVote | undefined>;
}

export class QuorumHold {
  readonly #held = new Map<number, HeldDatabase>();
  readonly #late = new Map<number, LateAnswer>();
  #closed = false;
  #validUntil = 0;

  constructor(
    readonly lockName: string,
    readonly settings: RedLockSettings,
  ) {}

  /** Late answers join the hold if they grant it, else are undone. */
  grant(
    held: readonly HeldDatabase[],
    late: readonly LateAnswer[],
    validUntil: number,
    owner: string,
  ): void {
    for (const each of held) this.#held.set(each.db.index, each);
    this.#validUntil = validUntil;
    for (const each of late) {
      this.#late.set(each.db.index, each);
      void each.answer.then((vote) => {
        if (this.#late.get(each.db.index) !== each) return; // taken over by close()
        this.#late.delete(each.db.index);
        if (vote?.kind === "acquired" && !this.#closed) {
          this.#held.set(each.db.index, { db: each.db, fencingToken: vote.fencingToken });
        } else if (vote === undefined || vote.kind === "acquired") {
          undoAcquire(each.db, owner, each.operationId).catch(() => {});
        }
      });
    }
  }

  get held(): readonly HeldDatabase[] {
    return [...this.#held.values()];
  }

  drop(index: number): void {
    this.#held.delete(index);
  }

  /** A majority re-armed the lease. */
  confirm(validUntil: number): void {
    this.#validUntil = validUntil;
  }

  /**
   * Released: no more late grants. Returns the requests in flight, for the caller to undo (exact
   * by operation id, run yet or not).
   */
  close(): LateAnswer[] {
    this.#closed = true;
    const late = [...this.#late.values()];
    this.#late.clear();
    return late;
  }

  /** Client clock: lease − elapsed − drift, counted from the last majority confirmation. */
  get validUntil(): number {
    return this.#validUntil;
  }

  /** In clients order; null where not held. */
  fencingTokens(): (number | null)[] {
    return Array.from(
      { length: this.settings.databases },
      (_, index) => this.#held.get(index)?.fencingToken ?? null,
    );
  }
}

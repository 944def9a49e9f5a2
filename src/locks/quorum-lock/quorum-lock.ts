/**
 * One lock name on every database of a RedLock, over the shared acquisition flow: attempts,
 * extend and renewal need a majority; release goes to every database that holds it.
 */
import { type QuorumTally, QuorumUnreachableError, QuorumWaitTimeoutError } from "../../errors.js";
import { newOperationId } from "../../platform.js";
import { isTransientFailure, markTransient } from "../../transport/failures.js";
import type { AcquireOptions } from "../../wait/acquire.js";
import { type AcquisitionSpec, acquireHold } from "../../wait/acquire.js";
import type { LockRuntime } from "../../wait/runtime.js";
import { attemptQuorum } from "./attempt.js";
import type { Database } from "./databases.js";
import { extendQuorum } from "./extend.js";
import { QuorumLockHandle } from "./handle.js";
import { QuorumHold } from "./hold.js";
import type { RedLockSettings } from "./options.js";
import { quorumRelease } from "./release.js";

interface TimedOut {
  readonly waitMs: number;
  readonly holderTtlMs: number | null;
  readonly tally: QuorumTally | undefined;
}

/** One lock name over a RedLock's databases, from `redLock.lock(name)`: held when a majority grants it. */
export class QuorumLock {
  /** The same on every database. */
  readonly name: string;
  readonly #databases: readonly Database[];
  readonly #home: LockRuntime;
  readonly #settings: RedLockSettings;

  /** @internal Use `redLock.lock(name)`. */
  constructor(
    name: string,
    databases: readonly Database[],
    home: LockRuntime,
    settings: RedLockSettings,
  ) {
    this.name = name;
    this.#databases = databases;
    this.#home = home;
    this.#settings = settings;
  }

  /**
   * Acquires the lock on a majority of the databases, waiting while other owners hold it, as
   * long as `waitMs` allows (default: until acquired, aborted or out of poll budget). Throws
   * QuorumWaitTimeoutError (contention), QuorumUnreachableError (too many databases down, once
   * the wait ends: rounds whose failures were all transient are ridden out up to
   * `wait.outageMs`), LockAbortedError, LockBudgetExceededError. The options are the reentrant
   * lock's; the owner, polling and watchdog are the first client's.
   * @example
   * await using held = await redLock.lock("orders:42").acquire({ waitMs: 2_000, leaseMs: 10_000 });
   */
  async acquire(options?: AcquireOptions): Promise<QuorumLockHandle> {
    const outcome = await this.#acquire(options, Number.POSITIVE_INFINITY);
    if (outcome instanceof QuorumLockHandle) return outcome;
    const tally = outcome.tally ?? this.#emptyTally();
    throw new QuorumWaitTimeoutError(this.name, outcome.waitMs, outcome.holderTtlMs, tally);
  }

  /** Like `acquire()`, but resolves to null instead of throwing when `waitMs` (default 0) passes. */
  async tryAcquire(options?: AcquireOptions): Promise<QuorumLockHandle | null> {
    const outcome = await this.#acquire(options, 0);
    return outcome instanceof QuorumLockHandle ? outcome : null;
  }

  async #acquire(options: unknown, defaultWaitMs: number): Promise<QuorumLockHandle | TimedOut> {
    const databases = this.#databases;
    const hold = new QuorumHold(this.name, this.#settings);
    let tally: QuorumTally | undefined;
    const spec: AcquisitionSpec = {
      runtime: this.#home,
      name: this.name,
      // One renewal per acquisition: each renews the databases it holds.
      watch: { localId: newOperationId() },
      attempt: async (owner, leaseMs) => {
        const attempt = await attemptQuorum(databases, owner, leaseMs, this.#settings);
        tally = attempt.tally;
        if (attempt.kind === "unreachable") {
          const error = new QuorumUnreachableError(this.name, attempt.tally, attempt.failures);
          // All transient: a wait with time left tries again (new ids); as after any lost
          // round, a grant whose undo did not land expires with its lease.
          const retryable = attempt.failures.every(({ error }) => isTransientFailure(error));
          throw retryable ? markTransient(error) : error;
        }
        if (attempt.kind === "contended") return { kind: "busy", holderTtlMs: attempt.holderTtlMs };
        hold.grant(attempt.held, attempt.late, attempt.validUntil, owner);
        return { kind: "acquired", fencingToken: attempt.held[0]?.fencingToken ?? 0 };
      },
      control: (owner) => ({
        extend: (ms) => extendQuorum(hold, owner, ms),
        release: quorumRelease(hold, owner),
      }),
      renew: (owner, leaseMs) => extendQuorum(hold, owner, leaseMs),
    };
    const outcome = await acquireHold(this.#home, options, defaultWaitMs, () => spec);
    if ("handle" in outcome) return new QuorumLockHandle(outcome.handle, hold);
    return { ...outcome, tally };
  }

  #emptyTally(): QuorumTally {
    const { databases, quorum } = this.#settings;
    return { databases, quorum, acquired: 0, busy: 0, unreachable: 0, elapsedMs: 0 };
  }
}

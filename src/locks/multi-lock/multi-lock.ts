/**
 * All of several locks or none (Redisson's RedissonMultiLock) for HTTP Redis: one script call per
 * Redis (no partial hold, no lock ordering), databases in parallel with an exact rollback.
 */
import { LockWaitTimeoutError } from "../../errors.js";
import type { AcquireOptions } from "../../wait/acquire.js";
import { type AcquisitionSpec, acquireHold, type WatchTarget } from "../../wait/acquire.js";
import type { LockRuntime } from "../../wait/runtime.js";
import { attemptAll, type UnsettledRollback } from "./attempt.js";
import { extendAll, type MultiHoldControl, multiHoldControl } from "./control.js";
import { MultiLockHandle } from "./handle.js";
import { groupMembers, type MemberGroup } from "./members.js";

const MAX_SHOWN_NAME = 200;

interface TimedOut {
  readonly waitMs: number;
  readonly holderTtlMs: number | null;
  /** At the last attempt, if known. */
  readonly blockedBy: string | null;
}

/**
 * All of several locks or none (Redisson RedissonMultiLock), from `client.multiLock(locks)`:
 * acquired in one request per database and rolled back exactly when any member misses.
 */
export class MultiLock {
  /** `multi(<member names>)`, for messages and events. */
  readonly name: string;
  /** In the order given. */
  readonly names: readonly string[];
  readonly #runtime: LockRuntime;
  readonly #groups: readonly MemberGroup[];
  readonly #watch: WatchTarget;

  /** @internal Use `client.multiLock(locks)`. */
  constructor(runtime: LockRuntime, locks: unknown) {
    const { names, groups } = groupMembers(locks);
    const joined = names.join(", ");
    this.name = `multi(${joined.length > MAX_SHOWN_NAME ? `${joined.slice(0, MAX_SHOWN_NAME)}…` : joined})`;
    this.names = names;
    this.#runtime = runtime;
    this.#groups = groups;
    // Re-entries of the same members by one owner share one renewal.
    this.#watch = {
      localId: `multi ${JSON.stringify(groups.flatMap((g) => g.members.map((m) => m.keys.lock)))}`,
    };
  }

  /** Redis clients the members live on: the requests of one acquire or release. */
  get databases(): number {
    return this.#groups.length;
  }

  /**
   * Acquires every member, waiting while any is held by another owner, as long as `waitMs`
   * allows (default: until acquired, aborted or out of poll budget). Throws LockWaitTimeoutError,
   * LockAbortedError, LockBudgetExceededError, or LockBackendError when a database failed (the
   * members acquired elsewhere are rolled back first). The options are the reentrant lock's.
   * @example
   * const both = client.multiLock([client.lock("account:1"), client.lock("account:2")]);
   * await using held = await both.acquire({ waitMs: 5_000, leaseMs: 10_000 });
   */
  async acquire(options?: AcquireOptions): Promise<MultiLockHandle> {
    const outcome = await this.#acquire(options, Number.POSITIVE_INFINITY);
    if (outcome instanceof MultiLockHandle) return outcome;
    const error = new LockWaitTimeoutError(this.name, outcome.waitMs, outcome.holderTtlMs);
    if (outcome.blockedBy !== null) error.message += ` The busy member: "${outcome.blockedBy}".`;
    throw error;
  }

  /** Like `acquire()`, but resolves to null instead of throwing when `waitMs` (default 0) passes. */
  async tryAcquire(options?: AcquireOptions): Promise<MultiLockHandle | null> {
    const outcome = await this.#acquire(options, 0);
    return outcome instanceof MultiLockHandle ? outcome : null;
  }

  async #acquire(options: unknown, defaultWaitMs: number): Promise<MultiLockHandle | TimedOut> {
    const groups = this.#groups;
    const memberCount = this.names.length;
    let tokens: readonly number[] = [];
    let blockedBy: string | null = null;
    let control: MultiHoldControl | undefined;
    // Re-sent before the next attempt.
    const unsettled: UnsettledRollback[] = [];
    const spec: AcquisitionSpec = {
      runtime: this.#runtime,
      name: this.name,
      watch: this.#watch,
      attempt: async (owner, leaseMs) => {
        const attempt = await attemptAll(this.name, groups, memberCount, owner, leaseMs, unsettled);
        if (attempt.kind === "busy") {
          blockedBy = attempt.blockedBy;
          return { kind: "busy", holderTtlMs: attempt.holderTtlMs };
        }
        tokens = attempt.fencingTokens;
        return { kind: "acquired", fencingToken: tokens[0] ?? 0 };
      },
      control: (owner) => {
        control = multiHoldControl(groups, owner, tokens);
        return control;
      },
      // Renewals name every member's hold, so an ended hold's watchdog never re-arms a later one.
      renew: (owner, leaseMs) => extendAll(groups, owner, leaseMs, tokens),
      holdId: () => tokens.join(","),
    };
    const outcome = await acquireHold(this.#runtime, options, defaultWaitMs, () => spec);
    if (!("handle" in outcome)) return { ...outcome, blockedBy };
    const members = this.names.map((name, i) => ({ name, fencingToken: tokens[i] ?? 0 }));
    return new MultiLockHandle(outcome.handle, members, control!);
  }
}

/**
 * A Renewer for chaos runs: it delegates to the in-process renewer, records when each lease was
 * last confirmed (to bound a holder's belief) and when its renewals were sent and settled (to
 * bound how long a dead holder may keep the lock), and can be killed per hold to simulate a
 * crashed holder.
 */
import {
  inProcessRenewer,
  type Renewal,
  type RenewalTarget,
  type Renewer,
} from "../../src/index.js";

/** One request that may have re-armed a lease: when it was sent, and when it settled. */
export interface ArmingRequest {
  readonly sentAt: number;
  /** Undefined while in flight. */
  settledAt: number | undefined;
  /** The lease it sets, in ms. */
  readonly leaseMs: number;
  /** True once it settled confirming the hold (re-armed it). */
  confirmed: boolean;
  /** True once it settled with an error (it may or may not have executed). */
  failed?: boolean;
  /** What it was and what came back, for a violation's report. */
  trace?: string;
  /** A late copy of an earlier request (see late-copies.ts): sent with it, settled later. */
  readonly copy?: boolean;
  /** A waiter's leave (queue.leave, semaphore.abandon, readWriteLock.abandonRead). */
  leave?: boolean;
  /**
   * A waiter's blocking pop (its park) that failed: recorded only then, as a request of its
   * owner that failed (the word it waited for may have been lost with it). It arms nothing.
   */
  readonly park?: boolean;
}

/**
 * The latest moment a holder may trust its hold, from its arming requests (see
 * ChaosHold.confirmedDeadline): confirmed requests in settle order, each settled before the
 * deadline so far moving it to settle time + lease. Settle times make it an upper bound of the
 * library's own deadline (which counts from send times).
 */
export function confirmedDeadline(requests: readonly ArmingRequest[]): number {
  const confirmed = requests
    .filter((request) => request.confirmed && request.settledAt !== undefined)
    .sort((a, b) => a.settledAt! - b.settledAt!);
  let deadline = Number.NEGATIVE_INFINITY;
  for (const request of confirmed) {
    if (deadline !== Number.NEGATIVE_INFINITY && request.settledAt! > deadline) break;
    deadline = Math.max(deadline, request.settledAt! + request.leaseMs);
  }
  return deadline;
}

/** Renewal requests are sequential, so the last few cover any recent moment. */
const HISTORY = 64;

/** What is known about the renewal of one (lock, owner). */
export interface RenewalRecord {
  /** Client time just before the request that last re-armed the lease was sent. */
  confirmedSentAt: number;
  /** The latest renewal requests, oldest first (at most 64). */
  readonly history: ArmingRequest[];
  /** Renewals that re-armed the lease. */
  renewals: number;
  /** True once `kill()` stopped it: the holder "crashed". */
  killed: boolean;
}

/**
 * When the last of `requests` sent no later than `sentBefore` settled: Infinity while it is still
 * in flight, 0 if there is none.
 */
export function settledBefore(requests: readonly ArmingRequest[], sentBefore: number): number {
  let latest = 0;
  for (const request of requests) {
    if (request.sentAt > sentBefore) continue;
    latest = Math.max(latest, request.settledAt ?? Number.POSITIVE_INFINITY);
  }
  return latest;
}

interface LiveRenewal {
  readonly name: string;
  readonly fencingToken: number;
  readonly record: RenewalRecord;
  readonly renewal: Renewal;
}

/** Where renewals happen when they are not in the holder's process (a Durable Object). */
export interface RemoteRenewals {
  /**
   * The renew requests sent elsewhere for `owner`, as the harness timed them; only those of the
   * hold named by `hold` (lock name, fencing token) when given.
   */
  requestsOf(
    owner: string,
    hold?: { readonly name?: string; readonly fencingToken?: number | undefined },
  ): readonly ArmingRequest[];
  /** The holder of `owner` crashed: called before its renewal is stopped. */
  crash(owner: string): void;
}

export class KillableRenewer implements Renewer {
  readonly #inner: Renewer;
  readonly #remote: RemoteRenewals | undefined;
  /** Renewals running, by owner (owners are fresh per critical section), oldest first. */
  readonly #live = new Map<string, LiveRenewal[]>();

  constructor(inner: Renewer = inProcessRenewer(), remote?: RemoteRenewals) {
    this.#inner = inner;
    this.#remote = remote;
  }

  /** As the renewer it wraps: the library picks how a handed-off hold is confirmed by it. */
  get inProcess(): boolean | undefined {
    return this.#inner.inProcess;
  }

  start(target: RenewalTarget, confirmedAt: number): Renewal {
    const record: RenewalRecord = {
      confirmedSentAt: confirmedAt,
      history: [],
      renewals: 0,
      killed: false,
    };
    const wrapped: RenewalTarget = {
      ...target,
      renew: async () => {
        const sentAt = Date.now();
        const request: ArmingRequest = {
          sentAt,
          settledAt: undefined,
          leaseMs: target.leaseMs,
          confirmed: false,
        };
        record.history.push(request);
        if (record.history.length > HISTORY) record.history.shift();
        try {
          const held = await target.renew();
          request.confirmed = held;
          if (held) {
            record.confirmedSentAt = Math.max(record.confirmedSentAt, sentAt);
            record.renewals += 1;
          }
          return held;
        } finally {
          request.settledAt = Date.now();
        }
      },
    };
    const renewal = this.#inner.start(wrapped, confirmedAt);
    const entry: LiveRenewal = {
      name: target.name,
      fencingToken: target.fencingToken,
      record,
      renewal,
    };
    const entries = this.#live.get(target.owner) ?? [];
    entries.push(entry);
    this.#live.set(target.owner, entries);
    return {
      stop: () => {
        renewal.stop();
        this.#forget(target.owner, entry);
      },
    };
  }

  #forget(owner: string, entry: LiveRenewal): void {
    const entries = this.#live.get(owner)?.filter((each) => each !== entry) ?? [];
    if (entries.length === 0) this.#live.delete(owner);
    else this.#live.set(owner, entries);
  }

  /**
   * The record of the latest renewal running for `owner`, if any — of the hold named by `hold`
   * when one matches (lock name and fencing token, else the token alone): the concurrent tasks of
   * one owner (a scope) each have holds, and renewals, of their own. With remote renewals, a live
   * view that also counts the requests sent elsewhere.
   */
  record(
    owner: string,
    hold: { readonly name?: string; readonly fencingToken?: number | undefined } = {},
  ): RenewalRecord | undefined {
    const live = this.#live.get(owner) ?? [];
    const byToken = live.filter((each) => each.fencingToken === hold.fencingToken);
    const byName = byToken.filter((each) => each.name === hold.name);
    const local = (byName.at(-1) ?? byToken.at(-1) ?? live.at(-1))?.record;
    const remote = this.#remote;
    if (local === undefined || remote === undefined) return local;
    const requestsOf = () => remote.requestsOf(owner, hold);
    return {
      get confirmedSentAt() {
        let latest = local.confirmedSentAt;
        for (const request of requestsOf()) {
          if (request.confirmed) latest = Math.max(latest, request.sentAt);
        }
        return latest;
      },
      get history() {
        return [...local.history, ...requestsOf()];
      },
      get renewals() {
        return local.renewals + requestsOf().filter((each) => each.confirmed).length;
      },
      get killed() {
        return local.killed;
      },
    };
  }

  /** Stops renewing every hold of `owner` without telling anyone, as a crashed process would. */
  kill(owner: string): void {
    this.#remote?.crash(owner);
    for (const entry of this.#live.get(owner) ?? []) {
      entry.record.killed = true;
      entry.renewal.stop();
    }
    this.#live.delete(owner);
  }

  /** Renewals running now. */
  get size(): number {
    let count = 0;
    for (const entries of this.#live.values()) count += entries.length;
    return count;
  }
}

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
}

/** Renewal requests are sequential, so the last few cover any recent moment. */
const HISTORY = 16;

/** What is known about the renewal of one (lock, owner). */
export interface RenewalRecord {
  /** Client time just before the request that last re-armed the lease was sent. */
  confirmedSentAt: number;
  /** The latest renewal requests, oldest first (at most 16). */
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

function recordKey(name: string, owner: string): string {
  return `${name}\n${owner}`;
}

export class KillableRenewer implements Renewer {
  readonly #inner: Renewer;
  readonly #live = new Map<string, { record: RenewalRecord; renewal: Renewal }>();

  constructor(inner: Renewer = inProcessRenewer()) {
    this.#inner = inner;
  }

  start(target: RenewalTarget, confirmedAt: number): Renewal {
    const key = recordKey(target.name, target.owner);
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
        const request: ArmingRequest = { sentAt, settledAt: undefined };
        record.history.push(request);
        if (record.history.length > HISTORY) record.history.shift();
        try {
          const held = await target.renew();
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
    const entry = { record, renewal };
    this.#live.set(key, entry);
    return {
      stop: () => {
        renewal.stop();
        if (this.#live.get(key) === entry) this.#live.delete(key);
      },
    };
  }

  /** The record of the renewal now running for (name, owner), if any. */
  record(name: string, owner: string): RenewalRecord | undefined {
    return this.#live.get(recordKey(name, owner))?.record;
  }

  /** Stops renewing (name, owner) without telling anyone, as a crashed process would. */
  kill(name: string, owner: string): void {
    const key = recordKey(name, owner);
    const entry = this.#live.get(key);
    if (!entry) return;
    entry.record.killed = true;
    entry.renewal.stop();
    this.#live.delete(key);
  }

  /** Renewals running now. */
  get size(): number {
    return this.#live.size;
  }
}

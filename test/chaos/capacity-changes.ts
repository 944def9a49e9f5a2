/**
 * Capacity changes under parked waiters (issue 41 case 3), for the semaphore kinds: an
 * administrator shrinks and grows a key's capacity at random (`setPermits(n)`, `addPermits(±k)`,
 * never below 1, back to the base capacity half the time it finds it changed), while some
 * sections ask for more than one permit, so that a shrink leaves waiters that no longer fit.
 *
 * Its checks read the fault-free observer only (capacity, holds with their permits and grant
 * time, the queue with each waiter's permits, all in one atomic reading), never the clients:
 * - a hold is granted only when it fits the capacity in force at its grant (semaphore.md:
 *   holders keep their permits and leases when the capacity shrinks, nobody new gets in until
 *   the holds fit again) — holds granted before a shrink may exceed the new capacity;
 * - the liveness check counts permits against the capacity at each reading (`freeForWaiters`),
 *   and a waiter that asks more than that capacity is not waiting for free permits;
 * - a waiter that asks more than the capacity ends in `SemaphoreCapacityError` within its park
 *   bound (semaphore.md: a parked one is told at the shrink, its next attempt throws at once),
 *   not in a timeout.
 *
 * The administrator's requests go through the faulty proxy (refused, lost, hung, slowed) on a
 * client of its own without late copies, one change at a time, and the observer reads the
 * capacity before each is sent and after it settles: as nobody else changes it, the capacity is
 * known exactly outside each change's window, and is one of before/asked/after inside it.
 */
import { Redis } from "@upstash/redis";
import { createPrng } from "../../dev/rest/faults.js";
import { LockClient } from "../../src/index.js";
import { semaphoreKeys } from "../../src/locks/semaphore/keys.js";
import type { ChaosEnvironment } from "./environment.js";
import { type InvariantResult, type LiveWait, Tally } from "./invariants.js";
import type { WaitRecord } from "./journal.js";
import type { ArmingRequest } from "./killable-renewer.js";
import type { KeyState, Sample } from "./server-state.js";

export interface CapacityChangeOptions {
  /** An administrator's capacity change every this many ms on average (0: never). */
  readonly everyMs: number;
  /** Fraction of owners whose acquisitions ask for 2 or 3 permits (the rest ask for 1). */
  readonly multiPermitRate: number;
  /**
   * Half the shrinks leave their key alone this long, in ms: longer than the bound in which a
   * waiter that no longer fits must be told, so that one never told shows (a capacity back to
   * fit it before the bound lets it wait on).
   */
  readonly keepLowMs: number;
  /**
   * In `semaphore-sub` too (else only in the polling `semaphore`): off in the short run, whose
   * 120 operations of that kind too seldom meet both a waiter that no longer fits and scope
   * siblings holding together under the stream faults.
   */
  readonly subscription: boolean;
}

/** One capacity change: the capacity is `before` until `sentAt`, `after` from `settledAt` on. */
export interface CapacityChangeRecord {
  readonly key: string;
  readonly how: "set" | "add";
  readonly sentAt: number;
  settledAt: number;
  readonly before: number;
  /** What it asks the capacity to be. */
  readonly asked: number;
  /** Read by the observer once it settled. */
  after: number;
  /** It returned (else it failed: refused, lost, hung; `after` says whether it applied). */
  ok: boolean;
}

/** What the administrator did, for the report. */
export interface CapacityCounts {
  readonly changes: number;
  readonly shrinks: number;
  readonly grows: number;
  /** Changes back to the base capacity (counted among shrinks or grows too). */
  readonly backToBase: number;
  /** Changes whose request failed (refused, answer lost, hung): applied or not, as `after` says. */
  readonly failed: number;
  /** Of the shrinks, those that left a live waiter asking more than the new capacity. */
  readonly shrinksUnderWaiters: number;
  /** Waits that ended in SemaphoreCapacityError. */
  readonly capacityErrors: number;
}

/** Permits an owner's acquisitions ask for: 2 or 3 for a `rate` of owners, else 1 (seeded by name). */
export function demandOf(owner: string, rate: number, base: number): number {
  let hash = 2_166_136_261;
  for (let i = 0; i < owner.length; i++) hash = Math.imul(hash ^ owner.charCodeAt(i), 16_777_619);
  const draw = (hash >>> 0) / 2 ** 32;
  if (draw >= rate) return 1;
  return Math.min(base, draw < rate / 2 ? 2 : 3);
}

/**
 * The administrator: every `everyMs` on average (the first a quarter in), one change of a key
 * (mostly one with waiters queued), through the faulty proxy, the next only once it settled.
 */
export function startCapacityChanges(
  env: ChaosEnvironment,
  keys: readonly string[],
  base: number,
  max: number,
  options: CapacityChangeOptions,
  seed: number,
  requestTimeoutMs: number,
): { readonly changes: readonly CapacityChangeRecord[]; stop(): Promise<void> } {
  const database = env.databases[0]!;
  const admin = new LockClient({
    redis: new Redis({
      url: database.proxy.url,
      token: database.server.token,
      enableTelemetry: false,
      signal: () => AbortSignal.timeout(requestTimeoutMs),
    }),
    prefix: env.prefix,
  });
  const observer = env.observer.redis;
  const capacityOf = async (key: string) =>
    Number((await observer.get<string | number>(semaphoreKeys(env.prefix, key).capacity)) ?? 0);
  const random = createPrng(seed ^ 0x5e3a);
  const changes: CapacityChangeRecord[] = [];
  let stopped = false;
  let wake = () => {};
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  // Keys left alone until then (a shrink kept low).
  const leftAlone = new Map<string, number>();
  const pickKey = async () => {
    const now = Date.now();
    const free = keys.filter((key) => (leftAlone.get(key) ?? 0) <= now);
    if (free.length === 0) return undefined;
    const queued = await Promise.all(
      free.map(async (key) => ({
        key,
        waiters: await observer.zcard(semaphoreKeys(env.prefix, key).queue),
      })),
    );
    const busy = queued.filter((each) => each.waiters > 0).map((each) => each.key);
    const among = busy.length > 0 && random() < 0.8 ? busy : free;
    return among[Math.floor(random() * among.length)] ?? free[0]!;
  };
  const loop = (async () => {
    if (options.everyMs <= 0) return;
    await pause(options.everyMs / 4);
    while (!stopped) {
      const key = await pickKey();
      const before = key === undefined ? 0 : await capacityOf(key);
      // Unset until the first acquisition sets it: an `addPermits` would count it as 0.
      if (key !== undefined && before > 0) {
        let asked: number;
        if (before !== base && random() < 0.5) asked = base;
        else if (before > 1 && (before >= max || random() < 0.6))
          asked = 1 + Math.floor(random() * (before - 1));
        else asked = Math.min(max, before + 1 + Math.floor(random() * 2));
        const how = random() < 0.5 ? "set" : "add";
        const record: CapacityChangeRecord = {
          key,
          how,
          sentAt: Date.now(),
          settledAt: Number.POSITIVE_INFINITY,
          before,
          asked,
          after: before,
          ok: false,
        };
        changes.push(record);
        const semaphore = admin.semaphore(key);
        try {
          if (how === "set") await semaphore.setPermits(asked);
          else await semaphore.addPermits(asked - before);
          record.ok = true;
        } catch {
          // Refused, lost or hung: the observer's reading below says whether it applied.
        }
        record.settledAt = Date.now();
        record.after = await capacityOf(key);
        if (record.after < before && random() < 0.5) {
          leftAlone.set(key, record.settledAt + options.keepLowMs);
        }
      }
      if (!stopped) await pause(options.everyMs * (0.5 + random()));
    }
  })();
  return {
    changes,
    async stop() {
      stopped = true;
      wake();
      await loop;
    },
  };
}

/**
 * The largest capacity `key` may have had at any moment of [from, to] (client ms): exact outside
 * a change's window (its `before` up to it, its `after` from its end), any of before, asked or
 * after inside it; `base` before the first change.
 */
export function capacityCeiling(
  changes: readonly CapacityChangeRecord[],
  key: string,
  base: number,
  from: number,
  to: number,
): number {
  let ceiling = 0;
  let previousEnd = Number.NEGATIVE_INFINITY;
  let previous = base;
  for (const change of changes) {
    if (change.key !== key) continue;
    // Between the previous change's end and this one's send: both observer readings.
    if (previousEnd <= to && change.sentAt >= from) {
      ceiling = Math.max(ceiling, previous, change.before);
    }
    if (change.sentAt <= to && change.settledAt >= from) {
      ceiling = Math.max(ceiling, change.before, change.asked, change.after);
    }
    previousEnd = change.settledAt;
    previous = change.after;
  }
  if (previousEnd <= to) ceiling = Math.max(ceiling, previous);
  return ceiling;
}

/** Permits the live holds of a reading take. */
function heldPermits(state: KeyState): number {
  return (state.permitHolds ?? []).reduce((sum, hold) => sum + hold.permits, 0);
}

/** A wait asks no more than the capacity of this reading (it can still be served). */
export function canFit(state: KeyState, wait: WaitRecord): boolean {
  return state.capacity === undefined || (wait.permits ?? 1) <= state.capacity;
}

/**
 * A semaphore's reading shows permits free for its waiters: walking the queue in ticket order
 * (waiters the server may prune left out, and those asking more than the capacity, which reserve
 * nothing), some waiter's permits fit beside the holds and what those ahead of it reserve — or,
 * past the queue, a live wait not yet queued fits that way.
 */
export function freeForWaiters(state: KeyState, live: readonly WaitRecord[]): boolean {
  const capacity = state.capacity ?? 0;
  const held = heldPermits(state);
  let reserved = 0;
  for (const waiter of state.waiting ?? []) {
    if (state.stale.has(waiter.owner) || waiter.permits > capacity) continue;
    if (held + reserved + waiter.permits <= capacity) return true;
    reserved += waiter.permits;
  }
  return live.some(
    (wait) =>
      !state.queue.has(wait.owner) &&
      (wait.permits ?? 1) <= capacity &&
      held + reserved + (wait.permits ?? 1) <= capacity,
  );
}

/**
 * Every hold was granted within the capacity in force at its grant: the permits of the holds a
 * reading shows granted no later than it (a lower fencing token: tokens are drawn in the grant's
 * own script; all live at its grant, as holds are never revived) fit the largest capacity the key
 * may have had then. The grant's server time is mapped to client time through the readings' own
 * send/answer times (`toClient`, with its uncertainty). Where the server did not record it (a hold
 * taken while nothing else was held or waited for), the grant lies between the last reading
 * without the hold and the first with it.
 */
export function checkGrantsWithinCapacity(
  samples: readonly Sample[],
  changes: readonly CapacityChangeRecord[],
  base: number,
  toleranceMs: number,
): InvariantResult {
  const tally = new Tally("semaphore: every hold granted within the capacity of its moment");
  const clock = serverClock(samples);
  const worst = new Map<
    string,
    {
      key: string;
      owner: string;
      token: number;
      grantedAt: { lo: number; hi: number };
      permits: number;
      with: string;
    }
  >();
  /** Per key, the server time of its last reading, and when each hold was first read. */
  const lastRead = new Map<string, number>();
  const firstRead = new Map<string, { lo: number; hi: number }>();
  for (const sample of samples) {
    for (const [key, state] of sample.states) {
      const holds = state.permitHolds;
      if (holds === undefined) continue;
      const at = state.serverAt ?? Number.NaN;
      for (const hold of holds) {
        const id = `${key} ${hold.owner} ${hold.token}`;
        if (!firstRead.has(id)) {
          firstRead.set(id, { lo: lastRead.get(key) ?? Number.NEGATIVE_INFINITY, hi: at });
        }
        const alongside = holds.filter((other) => other.token <= hold.token);
        const permits = alongside.reduce((sum, other) => sum + other.permits, 0);
        if (permits > (worst.get(id)?.permits ?? 0)) {
          worst.set(id, {
            key,
            owner: hold.owner,
            token: hold.token,
            grantedAt:
              hold.grantedAt === null
                ? firstRead.get(id)!
                : { lo: hold.grantedAt, hi: hold.grantedAt },
            permits,
            with: alongside.map((other) => `${other.token}×${other.permits}`).join(", "),
          });
        }
      }
      lastRead.set(key, at);
    }
  }
  for (const hold of worst.values()) {
    const from = Math.floor(hold.grantedAt.lo - clock.hi - toleranceMs);
    const to = Math.ceil(hold.grantedAt.hi - clock.lo + toleranceMs);
    const ceiling = capacityCeiling(changes, hold.key, base, from, to);
    tally.check(
      hold.permits <= ceiling,
      () =>
        `key ${hold.key}: ${hold.owner.slice(0, 8)}'s hold (token ${hold.token}) granted at server ${hold.grantedAt.lo}–${hold.grantedAt.hi} ` +
        `(client ${from}–${to}) beside holds granted no later (tokens×permits ${hold.with}): ${hold.permits} permits ` +
        `where the capacity was at most ${ceiling}`,
    );
  }
  return tally.result();
}

/**
 * Server time minus client time, as the readings bound it: each was read by the server at some
 * moment between its send and its answer.
 */
function serverClock(samples: readonly Sample[]): { lo: number; hi: number } {
  let lo = Number.NEGATIVE_INFINITY;
  let hi = Number.POSITIVE_INFINITY;
  for (const sample of samples) {
    for (const state of sample.states.values()) {
      if (state.serverAt === undefined) continue;
      lo = Math.max(lo, state.serverAt - sample.answeredAt);
      hi = Math.min(hi, state.serverAt - sample.sentAt);
      break;
    }
  }
  if (lo === Number.NEGATIVE_INFINITY) return { lo: 0, hi: 0 };
  // A clock that stepped between readings: take the widest.
  return lo <= hi ? { lo, hi } : { lo: hi, hi: lo };
}

/** What the check of waiters that no longer fit needs besides the readings. */
export interface CapacityErrorOptions {
  /** The requests the wait's owner sent (the harness's record of them, not the client's). */
  requestsOf(wait: LiveWait): readonly ArmingRequest[];
  /** The largest capacity the key may have had in [from, to] (see capacityCeiling). */
  capacityAt(key: string, from: number, to: number): number;
  /**
   * How long a live waiter may go without a request of its own once its last answer came: its
   * park (told or not) or its polling sleep, plus round trips.
   */
  readonly silenceMs: number;
  /** From the answer of an attempt that found it too large to the call's error, in ms. */
  readonly answerMs: number;
  readonly lateness?: (from: number, to: number) => number;
}

/**
 * A waiter that asks more than the capacity ends in `SemaphoreCapacityError` at its first
 * attempt the server answered while the capacity was surely below its permits (the answer is
 * the error: semaphore.md), and makes that attempt within its park or polling bound (a parked
 * one is told at the shrink; one whose word was lost asks when its park ends). From the first
 * reading that showed its key's capacity below its permits while it was live, the harness's
 * record of the owner's requests decides: the first one that did not fail and ran wholly while
 * the capacity was below (by the administrator's record) must end the wait with that error
 * within `answerMs`; and if none was sent at all within `silenceMs` (none failed either), the
 * waiter slept past its bound. Waits that were served (left to the grant check), gave up or died,
 * and owners with several waits (scope siblings share an owner) are not checked.
 */
export function checkCapacityErrors(
  samples: readonly Sample[],
  waits: readonly LiveWait[],
  options: CapacityErrorOptions,
): InvariantResult {
  const tally = new Tally(
    "semaphore: a waiter asking more than the capacity gets SemaphoreCapacityError in its bound",
  );
  const lateness = options.lateness ?? (() => 0);
  const byKey = new Map<string, Sample[]>();
  for (const sample of samples) {
    for (const key of sample.states.keys()) {
      const list = byKey.get(key) ?? [];
      list.push(sample);
      byKey.set(key, list);
    }
  }
  for (const list of byKey.values()) list.sort((a, b) => a.sentAt - b.sentAt);
  const waitsOf = new Map<string, number>();
  for (const wait of waits) waitsOf.set(wait.owner, (waitsOf.get(wait.owner) ?? 0) + 1);
  for (const wait of waits) {
    if (waitsOf.get(wait.owner)! > 1 || wait.token !== undefined) continue;
    const permits = wait.permits ?? 1;
    // The first reading in its wait (or the last before it) that showed the capacity below its
    // permits: from then on (or from its start), the capacity was below them.
    const list = byKey.get(wait.key) ?? [];
    const first = Math.max(0, list.findIndex((sample) => sample.sentAt >= wait.startedAt) - 1);
    const seen = list.slice(first).find((sample) => {
      const capacity = sample.states.get(wait.key)!.capacity ?? 0;
      return sample.answeredAt <= wait.liveUntil && capacity > 0 && capacity < permits;
    });
    if (seen === undefined) continue;
    const seenAt = Math.max(wait.startedAt, seen.answeredAt);
    const requests = options
      .requestsOf(wait)
      .filter(
        (request) =>
          request.copy !== true &&
          request.leave !== true &&
          request.park !== true &&
          request.sentAt >= seenAt &&
          request.sentAt <= wait.endedAt,
      );
    const answered = requests.find(
      (request) =>
        request.failed !== true &&
        request.settledAt !== undefined &&
        options.capacityAt(wait.key, request.sentAt, request.settledAt) < permits,
    );
    const describe = (due: number, what: string) => () =>
      `key ${wait.key}: ${wait.owner.slice(0, 8)} (isolate ${wait.isolate}) asked ${permits} permits from ${wait.startedAt}; ` +
      `the capacity was below that from ${seenAt} (observer) on; ${what}; it ended ${
        wait.endedAt === Number.POSITIVE_INFINITY ? "never" : `at ${wait.endedAt}`
      } with ${wait.error ?? "nothing"}, due by ${due}`;
    // Silent for its whole bound while live (from the shrink, or from the answer of a request
    // still in flight then): nothing told it, or it slept past its bound.
    const quietFrom = Math.max(
      seenAt,
      ...options
        .requestsOf(wait)
        .filter(
          (request) => request.copy !== true && request.park !== true && request.sentAt < seenAt,
        )
        .map((request) => request.settledAt ?? Number.POSITIVE_INFINITY),
    );
    const quietUntil =
      quietFrom + options.silenceMs + lateness(quietFrom, quietFrom + options.silenceMs);
    const ownDeadline = wait.startedAt + (wait.waitMs ?? Number.POSITIVE_INFINITY);
    if (
      !requests.some((request) => request.sentAt <= quietUntil) &&
      Math.min(wait.liveUntil, wait.endedAt, ownDeadline) > quietUntil
    ) {
      tally.check(false, describe(quietUntil, "it sent nothing in its bound"));
      continue;
    }
    if (answered === undefined) continue;
    const settledAt = answered.settledAt!;
    const dueAt = settledAt + options.answerMs + lateness(settledAt, settledAt + options.answerMs);
    // It gave up or died before that answer reached it.
    if (wait.liveUntil < Math.min(wait.endedAt, dueAt)) continue;
    tally.check(
      wait.endedAt <= dueAt && wait.error === "SemaphoreCapacityError",
      describe(dueAt, `its request sent at ${answered.sentAt} was answered at ${settledAt}`),
    );
  }
  return tally.result();
}

/** The administrator's changes and their effect on waiters, for the report. */
export function capacityCounts(
  changes: readonly CapacityChangeRecord[],
  base: number,
  waits: readonly LiveWait[],
): CapacityCounts {
  const applied = changes.filter((change) => change.after !== change.before);
  const shrinks = applied.filter((change) => change.after < change.before);
  const shrinksUnderWaiters = shrinks.filter((change) =>
    waits.some(
      (wait) =>
        wait.key === change.key &&
        wait.startedAt <= change.sentAt &&
        wait.liveUntil >= change.settledAt &&
        (wait.permits ?? 1) > change.after,
    ),
  ).length;
  return {
    changes: changes.length,
    shrinks: shrinks.length,
    grows: applied.filter((change) => change.after > change.before).length,
    backToBase: applied.filter((change) => change.after === base).length,
    failed: changes.filter((change) => !change.ok).length,
    shrinksUnderWaiters,
    capacityErrors: waits.filter((wait) => wait.error === "SemaphoreCapacityError").length,
  };
}

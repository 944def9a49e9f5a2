/**
 * The invariants of a chaos run, as pure functions of its journal: each says how many cases it
 * checked and how many broke it, with a few examples to start debugging from.
 */

import { GRANT_PARK_SHARE } from "../../src/hold/queue/hand-off.js";
import type {
  DeadHolderRecord,
  ForceReleaseRecord,
  HoldRecord,
  Journal,
  LivenessExcuse,
  ReleaseCheck,
  SectionRecord,
  TokenRecord,
  WaitRecord,
  WriteRecord,
} from "./journal.js";
import type { KeyState, Sample } from "./server-state.js";

export interface InvariantResult {
  readonly name: string;
  readonly checked: number;
  readonly violations: number;
  readonly examples: readonly string[];
}

const MAX_EXAMPLES = 5;

/** One invariant's count of cases checked and broken, with a few examples. */
export class Tally {
  checked = 0;
  violations = 0;
  readonly examples: string[] = [];

  constructor(readonly name: string) {}

  check(ok: boolean, describe: () => string): void {
    this.checked += 1;
    if (ok) return;
    this.violations += 1;
    if (this.examples.length < MAX_EXAMPLES) this.examples.push(describe());
  }

  result(): InvariantResult {
    return {
      name: this.name,
      checked: this.checked,
      violations: this.violations,
      examples: this.examples,
    };
  }
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

/**
 * No more than `capacity` exclusive sections of one key were inside their valid interval
 * [start, validEnd) at once, and no shared section overlapped an exclusive one of another owner.
 * A sweep over start/end events per key; touching intervals are fine.
 */
export function checkExclusion(
  sections: readonly SectionRecord[],
  capacity: number,
): InvariantResult {
  const tally = new Tally("no overlapping valid critical sections");
  for (const [key, group] of groupBy(sections, (section) => section.key)) {
    const events: { at: number; delta: 1 | -1; section: SectionRecord }[] = [];
    for (const section of group) {
      if (section.validEnd <= section.start) {
        tally.check(true, () => "");
        continue;
      }
      events.push({ at: section.start, delta: 1, section });
      events.push({ at: section.validEnd, delta: -1, section });
    }
    // Ends before starts at the same instant: [a, b) and [b, c) do not overlap.
    events.sort((a, b) => a.at - b.at || a.delta - b.delta);
    const inside = new Set<SectionRecord>();
    for (const event of events) {
      if (event.delta === -1) {
        inside.delete(event.section);
        continue;
      }
      const entering = event.section;
      inside.add(entering);
      // Re-entrant holds of one owner (the tasks of one scope) are one holder: count owners.
      const exclusive = new Set(
        [...inside].filter((other) => !other.shared).map((other) => other.owner),
      );
      const conflicting = [...inside].filter(
        (other) =>
          other !== entering &&
          other.owner !== entering.owner &&
          (!other.shared || !entering.shared),
      );
      const ok = entering.shared
        ? conflicting.length === 0
        : exclusive.size <= capacity && (capacity > 1 || conflicting.length === 0);
      tally.check(
        ok,
        () =>
          `key ${key}: ${entering.shared ? "reader" : "owner"} ${entering.owner.slice(0, 8)} (token ${entering.token}) started at ` +
          `${entering.start} inside ${conflicting
            .map((o) => `${o.owner.slice(0, 8)} [${o.start}, ${o.validEnd}) token ${o.token}`)
            .join(", ")}`,
      );
    }
  }
  return tally.result();
}

/**
 * The sections as far as their holders could trust them despite an administrator: a force
 * release ends whatever hold it meets, at some moment between its send and its settle, and
 * nobody tells the holder until its next renewal (or its lease's end). So every section of a
 * force-released key whose interval — from when its acquisition was sent, since the grant may
 * precede the force release that the answer then outlives — meets that window is cut at the
 * window's start (at its own start if the window began before it). Mutual exclusion is then the fencing token's job, which is
 * checked in full.
 */
export function cutByForceReleases(
  sections: readonly SectionRecord[],
  forceReleases: readonly ForceReleaseRecord[],
): SectionRecord[] {
  if (forceReleases.length === 0) return [...sections];
  const byKey = new Map<string, ForceReleaseRecord[]>();
  for (const release of forceReleases) {
    for (const key of release.keys) {
      const list = byKey.get(key);
      if (list) list.push(release);
      else byKey.set(key, [release]);
    }
  }
  return sections.map((section) => {
    let validEnd = section.validEnd;
    for (const release of byKey.get(section.key) ?? []) {
      if ((release.holds === "shared") !== (section.shared ?? false)) continue;
      // It may have met the hold if it could still run after the grant: after the acquisition
      // was sent (a force release between the grant and its answer ends a hold not yet in hand).
      if (release.sentAt >= validEnd || release.settledAt <= (section.requestedAt ?? section.start))
        continue;
      validEnd = Math.min(validEnd, Math.max(section.start, release.sentAt));
    }
    return validEnd === section.validEnd ? section : { ...section, validEnd };
  });
}

/** The samples that read `key`, sorted by send time. */
function samplesByKey(samples: readonly Sample[]): Map<string, Sample[]> {
  const byKey = new Map<string, Sample[]>();
  for (const sample of samples) {
    for (const key of sample.states.keys()) {
      const list = byKey.get(key);
      if (list) list.push(sample);
      else byKey.set(key, [sample]);
    }
  }
  for (const list of byKey.values()) list.sort((a, b) => a.sentAt - b.sentAt);
  return byKey;
}

/** Samples sent at or after `from`, in order (binary search, then a walk). */
function* samplesFrom(list: readonly Sample[], from: number): Generator<Sample> {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (list[mid]!.sentAt < from) low = mid + 1;
    else high = mid;
  }
  for (let i = low; i < list.length; i++) yield list[i]!;
}

/**
 * The server never showed two exclusive holders of a key (beyond capacity), nor an exclusive
 * holder beside a shared holder of another owner.
 */
export function checkServerExclusion(
  samples: readonly Sample[],
  capacity: number,
): InvariantResult {
  const tally = new Tally("server: no two exclusive holders, no writer with a reader");
  for (const sample of samples) {
    for (const [key, state] of sample.states) {
      const exclusive = [...state.holders].filter(([, mode]) => mode === "exclusive");
      const readers = [...state.holders].filter(([, mode]) => mode === "shared");
      tally.check(
        exclusive.length <= capacity && (exclusive.length === 0 || readers.length === 0),
        () =>
          `key ${key} at ${sample.sentAt}: exclusive ${exclusive.map(([o]) => o.slice(0, 8)).join(", ")}; ` +
          `shared ${readers.map(([o]) => o.slice(0, 8)).join(", ")}`,
      );
    }
  }
  return tally.result();
}

/**
 * Every reading of the server taken wholly inside a section's valid interval shows the section's
 * owner holding the key (exclusively for an exclusive section; RedLock: on a majority). The
 * client's belief is checked against the server, never the other way round.
 */
export function checkHeldAsBelieved(
  sections: readonly SectionRecord[],
  samples: readonly Sample[],
): InvariantResult {
  const tally = new Tally("server holds every hold its client trusts");
  const byKey = samplesByKey(samples);
  for (const section of sections) {
    for (const sample of samplesFrom(byKey.get(section.key) ?? [], section.start)) {
      if (sample.sentAt >= section.validEnd) break;
      // Wholly inside [start, validEnd): a reading answered at validEnd may have run at that very
      // millisecond, when the lease (server: alive while its end > now) has already ended.
      if (sample.answeredAt >= section.validEnd) continue;
      const mode = sample.states.get(section.key)?.holders.get(section.owner);
      tally.check(
        mode !== undefined && (section.shared || mode === "exclusive"),
        () =>
          `key ${section.key}: ${section.owner.slice(0, 8)} trusted [${section.start}, ${section.validEnd}) ` +
          `(token ${section.token}) but the server showed it ${mode ?? "not held"} at ${sample.sentAt}–${sample.answeredAt}`,
      );
    }
  }
  return tally.result();
}

/**
 * A handle trusts only its own hold: every reading of a lock's fencing counter taken wholly
 * inside an exclusive section's valid interval shows the section's token as the lock's latest
 * (each grant takes the next token, so a later hold — even of the same owner, a sibling task of
 * one scope that acquired after this hold ended — shows a larger one). A handle whose hold ended
 * but which still believes it holds, because something of a later hold of its owner kept it
 * going (a renewal, an extend, a replay keyed by owner), breaks this even though the owner does
 * hold the lock. Kinds whose readings have no counter (multi-lock, RedLock) are not checked.
 */
export function checkOwnHold(
  sections: readonly SectionRecord[],
  samples: readonly Sample[],
): InvariantResult {
  const tally = new Tally("a trusted hold is the lock's current one (its token)");
  const byKey = samplesByKey(samples);
  for (const section of sections) {
    if (section.shared || section.token === undefined) continue;
    for (const sample of samplesFrom(byKey.get(section.key) ?? [], section.start)) {
      if (sample.sentAt >= section.validEnd) break;
      if (sample.answeredAt >= section.validEnd) continue; // not wholly inside (above)
      const fence = sample.states.get(section.key)?.fence;
      if (fence === undefined) continue;
      tally.check(
        fence === section.token,
        () =>
          `key ${section.key}: ${section.owner.slice(0, 8)} trusted [${section.start}, ${section.validEnd}) ` +
          `with token ${section.token} but the lock's latest token was ${fence} at ${sample.sentAt}–${sample.answeredAt} ` +
          `(held by ${[...(sample.states.get(section.key)?.holders.keys() ?? [])].map((o) => o.slice(0, 8)).join(", ") || "nobody"})`,
      );
    }
  }
  return tally.result();
}

/**
 * When the observer first showed each hold lost during its section (answer time): its owner not
 * holding a key of it, or holding a later hold (the lock's token moved on). Holds never seen lost
 * are absent.
 */
export function seenLost(
  holds: readonly HoldRecord[],
  samples: readonly Sample[],
): Map<HoldRecord, number> {
  const byKey = samplesByKey(samples);
  const lost = new Map<HoldRecord, number>();
  for (const hold of holds) {
    let lostAt = Number.POSITIVE_INFINITY;
    for (const key of hold.keys) {
      for (const sample of samplesFrom(byKey.get(key) ?? [], hold.start)) {
        if (sample.answeredAt > hold.end) break;
        const state = sample.states.get(key);
        // Not held by its owner, or held by a later hold of it (another task of one scope).
        const later =
          !hold.shared &&
          hold.token !== undefined &&
          state?.fence !== undefined &&
          state.fence !== hold.token;
        if (!state?.holders.has(hold.owner) || later) {
          lostAt = Math.min(lostAt, sample.answeredAt);
          break;
        }
      }
    }
    if (lostAt !== Number.POSITIVE_INFINITY) lost.set(hold, lostAt);
  }
  return lost;
}

/**
 * Every hold the server showed lost (its owner not holding, or holding a later hold: the lock's
 * token moved on) while its section still ran had its signal aborted by its confirmed deadline (+ `slackMs` for timers under load, + the harness process's own timer
 * lateness measured around the deadline, `lateness`), unless the section ended before.
 */
export function checkLostSignals(
  holds: readonly HoldRecord[],
  samples: readonly Sample[],
  slackMs: number,
  lateness: (from: number, to: number) => number = () => 0,
): InvariantResult {
  const tally = new Tally("every lost hold's signal aborted by its confirmed end");
  const lostAtOf = seenLost(holds, samples);
  for (const hold of holds) {
    const lostAt = lostAtOf.get(hold) ?? Number.POSITIVE_INFINITY;
    if (lostAt === Number.POSITIVE_INFINITY) continue;
    const deadline = hold.deadline();
    const late = lateness(deadline, deadline + slackMs);
    const due = deadline + slackMs + late;
    // Ended before it was due: nothing the signal owed.
    if (hold.end <= due) {
      tally.check(true, () => "");
      continue;
    }
    tally.check(
      hold.abortedAt() <= due,
      () =>
        `${hold.keys.join("+")}: ${hold.mode} hold ${hold.owner.slice(0, 8)} seen lost at ${lostAt}, confirmed until ${deadline}, ` +
        `section ran to ${hold.end}, signal ${
          hold.abortedAt() === Number.POSITIVE_INFINITY
            ? "never aborted"
            : `aborted ${hold.abortedAt() - deadline} ms past it`
        } (timers ran up to ${late} ms late then)`,
    );
  }
  return tally.result();
}

/**
 * All or none: no reading shows an owner holding some of the keys it asked for (a multi-lock's
 * members) but not all of them.
 */
export function checkAllOrNone(
  samples: readonly Sample[],
  planned: ReadonlyMap<string, readonly string[]>,
): InvariantResult {
  const tally = new Tally("multi-lock: every member held, or none");
  for (const sample of samples) {
    const seen = new Set<string>();
    for (const state of sample.states.values())
      for (const owner of state.holders.keys()) seen.add(owner);
    for (const owner of seen) {
      const keys = planned.get(owner);
      if (keys === undefined || keys.length < 2) continue;
      if (!keys.every((key) => sample.states.has(key))) continue;
      const heldKeys = keys.filter((key) => sample.states.get(key)!.holders.has(owner));
      tally.check(
        heldKeys.length === keys.length,
        () =>
          `${owner.slice(0, 8)} held ${heldKeys.join(", ")} of ${keys.join(", ")} at ${sample.sentAt}`,
      );
    }
  }
  return tally.result();
}

/**
 * Live fair waiters are served in arrival order. Between two consecutive readings S1 and S2 of a
 * key, the owners granted are those whose token lies in (fence at S1, fence at S2]. A waiter A is
 * *live* across that interval when both readings show it queued with the same ticket: its place
 * was kept (a waiter that stopped polling is pruned by the next script, the granting one
 * included, and comes back with a later ticket). No owner queued behind a live A at S1 may be
 * granted in the interval.
 */
export function checkFairOrder(
  samples: readonly Sample[],
  tokens: readonly TokenRecord[],
): InvariantResult {
  const tally = new Tally("live fair waiters served in arrival order");
  const byKey = samplesByKey(samples);
  for (const [key, list] of byKey) {
    const ownerOf = new Map(
      tokens.filter((token) => token.key === key).map((token) => [token.token, token.owner]),
    );
    for (let i = 1; i < list.length; i++) {
      const before = list[i - 1]!.states.get(key)!;
      const after = list[i]!.states.get(key)!;
      if (before.fence === undefined || after.fence === undefined) continue;
      if (list[i]!.sentAt < list[i - 1]!.answeredAt) continue; // overlapping readings
      const live = [...before.queue].filter(([owner, ticket]) => after.queue.get(owner) === ticket);
      for (let token = before.fence + 1; token <= after.fence; token++) {
        const granted = ownerOf.get(token);
        const ticket = granted === undefined ? undefined : before.queue.get(granted);
        if (ticket === undefined) continue;
        const skipped = live.filter(([, waiting]) => waiting < ticket);
        tally.check(
          skipped.length === 0,
          () =>
            `key ${key}: ${granted!.slice(0, 8)} (ticket ${ticket}) got token ${token} while ` +
            `${skipped.map(([owner, waiting]) => `${owner.slice(0, 8)} (ticket ${waiting})`).join(", ")} kept its place ahead`,
        );
      }
    }
  }
  return tally.result();
}

/** Until when a wait was owed the lock: it returned, its process was killed, or it gave up. */
export function liveUntil(wait: WaitRecord, crashedAt: number | undefined): number {
  return Math.min(wait.endedAt, wait.abortedAt, crashedAt ?? Number.POSITIVE_INFINITY);
}

/** What the liveness check needs of a run. */
export interface LivenessOptions {
  /** Idle allowed with nothing to excuse it: a hand-off's round trips, a claim window, timers. */
  readonly baseMs: number;
  /** The harness's timer lateness over an interval (see LoopLag): excused as well. */
  readonly lateness?: (from: number, to: number) => number;
}

/** One stretch of readings of a key that showed it free while some live waiter waited. */
export interface IdleStretch {
  readonly key: string;
  /** Answer of the first such reading, send of the last: surely idle in between. */
  readonly from: number;
  readonly to: number;
  /** The waiters live in it. */
  readonly waiters: readonly WaitRecord[];
}

/**
 * The stretches in which the observer's readings showed a key free (for its waiters) while at
 * least one live waiter waited on it, read after read, with no grant between them (the key's
 * grant counter unchanged): surely idle from the first reading's answer to the last one's send.
 */
export function idleStretches(
  samples: readonly Sample[],
  waits: readonly (WaitRecord & { readonly liveUntil: number })[],
  free: (state: KeyState, live: readonly WaitRecord[]) => boolean,
  /** Whether a wait can be served at this reading (a semaphore's: it fits the capacity). */
  waiting: (state: KeyState, wait: WaitRecord) => boolean = () => true,
): IdleStretch[] {
  const stretches: IdleStretch[] = [];
  const waitsByKey = groupBy(waits, (wait) => wait.key);
  for (const [key, list] of samplesByKey(samples)) {
    const keyWaits = waitsByKey.get(key) ?? [];
    if (keyWaits.length === 0) continue;
    let open:
      | { from: number; to: number; grants: number | undefined; waiters: Set<WaitRecord> }
      | undefined;
    const close = () => {
      if (open !== undefined && open.to > open.from) {
        stretches.push({ key, from: open.from, to: open.to, waiters: [...open.waiters] });
      }
      open = undefined;
    };
    for (const sample of list) {
      const state = sample.states.get(key)!;
      const live = keyWaits.filter(
        (wait) =>
          wait.startedAt <= sample.sentAt &&
          sample.answeredAt <= wait.liveUntil &&
          waiting(state, wait),
      );
      const grants = state.fence ?? state.granted;
      const idle = live.length > 0 && free(state, live);
      if (!idle || (open !== undefined && open.grants !== grants)) {
        close();
        if (!idle) continue;
      }
      if (open === undefined) {
        open = { from: sample.answeredAt, to: sample.answeredAt, grants, waiters: new Set() };
      } else {
        open.to = Math.max(open.to, sample.sentAt);
      }
      for (const wait of live) open.waiters.add(wait);
    }
    close();
  }
  return stretches;
}

/**
 * Liveness, from the observer's readings (the client is not asked): no key stayed free for its
 * waiters — nobody holding it, or a semaphore's permits free — while one of them was live
 * (waiting, not killed, not given up) for longer than the base bound, unless something the docs
 * allow to cost that much happened on that key (a lost word costs one park, a dead waiter's
 * registration its park + grace + claim window, a spike its latency...): each such excuse lets the
 * key stay idle until its own end, plus the base bound, and no longer.
 */
export function checkLiveness(
  stretches: readonly IdleStretch[],
  excuses: readonly LivenessExcuse[],
  options: LivenessOptions,
): InvariantResult {
  const tally = new Tally("no free lock or permit idle past its bound while a live waiter waits");
  const byKey = groupBy(
    excuses.filter((excuse) => excuse.key !== undefined),
    (excuse) => excuse.key!,
  );
  const everywhere = excuses.filter((excuse) => excuse.key === undefined);
  for (const stretch of stretches) {
    let excusedUntil = stretch.from;
    const reasons: string[] = [];
    for (const excuse of [...(byKey.get(stretch.key) ?? []), ...everywhere]) {
      if (excuse.at > stretch.to || excuse.until < stretch.from) continue;
      if (excuse.owner !== undefined && !stretch.waiters.some((w) => w.owner === excuse.owner)) {
        continue;
      }
      if (
        excuse.isolate !== undefined &&
        !stretch.waiters.some((w) => w.isolate === excuse.isolate)
      ) {
        continue;
      }
      if (excuse.until > excusedUntil) {
        excusedUntil = excuse.until;
        reasons.push(`${excuse.what} at ${excuse.at}`);
      }
    }
    const late = options.lateness?.(stretch.from, stretch.to) ?? 0;
    const bound = excusedUntil + options.baseMs + late;
    tally.check(
      stretch.to <= bound,
      () =>
        `key ${stretch.key}: free and idle ${stretch.to - stretch.from} ms (${stretch.from}–${stretch.to}) while ` +
        `${stretch.waiters.map((wait) => `${wait.owner.slice(0, 8)} (isolate ${wait.isolate}, waiting since ${wait.startedAt})`).join(", ")} waited; ` +
        `allowed until ${bound} (${reasons.length > 0 ? `excused by ${reasons.slice(-2).join(", ")}; ` : ""}base ${options.baseMs} ms, timers ${late} ms late)`,
    );
  }
  return tally.result();
}

/** A waiting acquisition with until when it was owed the lock (see liveUntil). */
export type LiveWait = WaitRecord & { readonly liveUntil: number };

/**
 * A grant to a live waiter is its hold (fair kinds and semaphores: FIFO). Whenever the observer
 * saw a waiter's owner granted a hold (its token: the lock's fence while the owner held it, or a
 * semaphore lease of it) during that owner's wait, the wait — still live until it returned — must
 * return that very hold (the grant outlives a park whose word was lost, the next attempt replays
 * it): a waiter that ends up with a later token lost its grant, and its place, to those behind it.
 * Only owners with one wait and no other hold during it are checked (scope siblings share an
 * owner), and `excused` ones are left out (a request of theirs failed: what it did is unknown),
 * as are those whose grant `excusedGrant` excuses (a spike delayed its word past any window).
 * A token that another call of the owner returned (`returnedElsewhere`: a sibling's tryAcquire
 * or re-entry, which no wait records) is that call's hold, not a grant to this wait.
 */
export function checkGrantsKept(
  samples: readonly Sample[],
  waits: readonly LiveWait[],
  excused: (wait: LiveWait) => boolean,
  excusedGrant: (wait: LiveWait, seenAt: number) => boolean = () => false,
  returnedElsewhere: (wait: LiveWait, token: number) => boolean = () => false,
  context: (wait: LiveWait, seenAt: number) => string = () => "",
): InvariantResult {
  const tally = new Tally("a grant to a live waiter is the hold it gets (its place kept)");
  const byKey = samplesByKey(samples);
  const waitsOf = groupBy(waits, (wait) => wait.owner);
  for (const wait of waits) {
    if (waitsOf.get(wait.owner)!.length !== 1) continue;
    if (wait.token === undefined || wait.liveUntil < wait.endedAt || excused(wait)) continue;
    const granted = new Set<number>();
    let firstSeenAt = Number.POSITIVE_INFINITY;
    for (const sample of samplesFrom(byKey.get(wait.key) ?? [], wait.startedAt)) {
      if (sample.answeredAt >= wait.endedAt) break;
      const state = sample.states.get(wait.key)!;
      if (!state.holders.has(wait.owner)) continue;
      const tokens = (state.tokens?.get(wait.owner) ?? [state.fence]).filter(
        (token): token is number =>
          token !== undefined && (token === wait.token || !returnedElsewhere(wait, token)),
      );
      if (tokens.length === 0) continue;
      firstSeenAt = Math.min(firstSeenAt, sample.sentAt);
      for (const token of tokens) granted.add(token);
    }
    if (granted.size === 0 || excusedGrant(wait, firstSeenAt)) continue;
    tally.check(
      granted.size === 1 && granted.has(wait.token),
      () =>
        `key ${wait.key}: ${wait.owner.slice(0, 8)} (isolate ${wait.isolate}) waited from ${wait.startedAt} to ${wait.endedAt}, ` +
        `was granted token ${[...granted].join(", ")} from ${firstSeenAt} on (observer), and got token ${wait.token}` +
        context(wait, firstSeenAt),
    );
  }
  return tally.result();
}

/**
 * An excuse of checkGrantsKept: the waiter granted at `seenAt` (as the observer saw it) asked
 * again within its park's bound (`GRANT_PARK_SHARE` of the claim window, plus how late the
 * harness's timers ran meanwhile), but that request came back only after the window had closed:
 * its delivery (a loaded machine: the server and the proxy share its cores) took the margin a
 * park leaves for the round trip, as a latency spike would. A request that came back within the
 * window and still missed the grant is no excuse, nor is one sent past the bound.
 */
export function askedInTimeAnsweredLate(
  requests: readonly {
    readonly sentAt: number;
    readonly settledAt?: number;
    readonly copy?: boolean;
  }[],
  seenAt: number,
  claimMs: number,
  lateness: (from: number, to: number) => number,
): boolean {
  const next = requests.find((request) => request.copy !== true && request.sentAt >= seenAt);
  return (
    next?.settledAt !== undefined &&
    next.sentAt <= seenAt + claimMs * GRANT_PARK_SHARE + lateness(seenAt, next.sentAt) &&
    next.settledAt > seenAt + claimMs
  );
}

/**
 * An exclusion of checkGrantsKept: hold `token` was taken by a late copy of one of the waiter's
 * own requests (see late-copies.ts: its answer reached nobody, so the waiter knew nothing of the
 * hold), and the waiter's next request came only once the hold could have lapsed: sent a lease
 * after the copy left and answered `[-1]` (the hold was gone when it ran), or sent a lease after
 * the copy's answer, or never. A waiter that asked while the hold must still have been live, and
 * did not get it, stays a violation.
 */
export function takenByLateCopy(
  requests: readonly {
    readonly sentAt: number;
    readonly settledAt?: number;
    readonly copy?: boolean;
    readonly trace?: string;
    readonly deliveredAt?: number;
  }[],
  token: number,
  leaseMs: number,
): boolean {
  const took = new RegExp(`^→ \\[1,${token}[,\\]]`);
  const copy = requests.find(
    (request) =>
      request.copy === true && request.settledAt !== undefined && took.test(request.trace ?? ""),
  );
  if (copy?.settledAt === undefined) return false;
  const leftAt = copy.deliveredAt ?? copy.settledAt;
  const tookAt = copy.settledAt;
  const next = requests.find((request) => request.copy !== true && request.sentAt >= leftAt);
  if (next === undefined || next.sentAt > tookAt + leaseMs) return true;
  return next.sentAt >= leftAt + leaseMs && (next.trace ?? "").endsWith("→ [-1]");
}

/**
 * Every write the fenced store accepted carried a token strictly larger than the last accepted
 * one, and no token of a key was ever handed to two owners.
 */
export function checkFencing(
  writes: readonly WriteRecord[],
  tokens: readonly TokenRecord[],
): InvariantResult {
  const tally = new Tally("fencing tokens strictly increase");
  for (const write of writes) {
    if (write.status !== "accepted") continue;
    tally.check(
      write.token > write.previousToken,
      () =>
        `key ${write.key}: write with token ${write.token} accepted after token ${write.previousToken}`,
    );
  }
  const ownerOf = new Map<string, string>();
  for (const { key, owner, token } of tokens) {
    const id = `${key}\n${token}`;
    const first = ownerOf.get(id);
    if (first === undefined) ownerOf.set(id, owner);
    tally.check(
      first === undefined || first === owner,
      () => `key ${key}: token ${token} handed to ${first?.slice(0, 8)} and ${owner.slice(0, 8)}`,
    );
  }
  return tally.result();
}

/**
 * No hold count drifted: right after a clean release the owner held nothing, and once every dead
 * holder's lease had passed no key was left held.
 */
export function checkHoldCounts(
  releases: readonly ReleaseCheck[],
  leftHeld: readonly { key: string; owners: readonly string[] }[],
): InvariantResult {
  const tally = new Tally("no hold count drift");
  for (const release of releases) {
    tally.check(
      !release.stillHeld,
      () =>
        `key ${release.key}: owner ${release.owner.slice(0, 8)} still held it after release` +
        (release.context === undefined ? "" : ` (${release.context})`),
    );
  }
  for (const { key, owners } of leftHeld) {
    tally.check(
      owners.length === 0,
      () =>
        `key ${key}: held by ${owners.map((o) => o.slice(0, 8)).join(", ")} after all leases passed`,
    );
  }
  return tally.result();
}

/**
 * Every dead holder's lock came free by its bound (its last arming request settled + its lease),
 * give or take `toleranceMs` for clock granularity.
 */
export function checkDeadHolders(
  dead: readonly DeadHolderRecord[],
  toleranceMs: number,
): InvariantResult {
  const tally = new Tally("dead holders' locks came free within their bound");
  for (const holder of dead) {
    const late =
      holder.lastSeenHeldAt !== null && holder.lastSeenHeldAt > holder.boundAt + toleranceMs;
    tally.check(
      holder.freedAt !== null && !late,
      () =>
        `key ${holder.key}: ${holder.cause} holder ${holder.owner.slice(0, 8)} ` +
        (holder.freedAt === null
          ? "was never seen free"
          : `still held ${(holder.lastSeenHeldAt ?? 0) - holder.boundAt} ms past its bound ` +
            `(${holder.boundAt})`) +
        (holder.context === undefined ? "" : `; ${holder.context}`),
    );
  }
  return tally.result();
}

/** No promise rejection went unhandled during the run. */
export function checkUnhandled(unhandledRejections: number): InvariantResult {
  return {
    name: "no unhandled rejection",
    checked: 1,
    violations: unhandledRejections,
    examples: unhandledRejections > 0 ? [`${unhandledRejections} unhandled rejections`] : [],
  };
}

/** Every operation ended, with a result or an edgelock error (a typed one, with a stable name). */
export function checkOperationsEnded(journal: Journal): InvariantResult {
  const violations = journal.untypedErrors.length + journal.hung;
  const examples = [...journal.untypedErrors.slice(0, MAX_EXAMPLES)];
  if (journal.hung > 0) examples.push(`${journal.hung} operations hung`);
  return {
    name: "every operation ended with a result or a typed error",
    checked: journal.totalOperations,
    violations,
    examples,
  };
}

/** The REST token appeared in no error message, cause or event. */
export function checkSecrets(journal: Journal, inspected: number): InvariantResult {
  return {
    name: "REST token in no error or event",
    checked: inspected,
    violations: journal.secretLeaks.length,
    examples: journal.secretLeaks.slice(0, MAX_EXAMPLES),
  };
}

/** All invariants of a finished run. */
export function checkAll(
  journal: Journal,
  options: {
    capacity: number;
    toleranceMs: number;
    leftHeld: readonly { key: string; owners: readonly string[] }[];
    inspectedForSecrets: number;
    signalSlackMs: number;
    /** The harness's timer lateness around a moment (see LoopLag). */
    lateness?: (from: number, to: number) => number;
    /** Kind-specific checks that only make sense where the kind has the structure. */
    fair: boolean;
    multi: boolean;
  },
): InvariantResult[] {
  const sections = cutByForceReleases(journal.sections, journal.forceReleases);
  const kindChecks: InvariantResult[] = [];
  if (options.fair) kindChecks.push(checkFairOrder(journal.samples, journal.tokens));
  if (options.multi) kindChecks.push(checkAllOrNone(journal.samples, journal.planned));
  return [
    checkExclusion(sections, options.capacity),
    checkServerExclusion(journal.samples, options.capacity),
    checkHeldAsBelieved(sections, journal.samples),
    checkOwnHold(sections, journal.samples),
    checkLostSignals(journal.holds, journal.samples, options.signalSlackMs, options.lateness),
    ...kindChecks,
    checkFencing(journal.writes, journal.tokens),
    checkHoldCounts(journal.releaseChecks, options.leftHeld),
    checkDeadHolders(journal.dead, options.toleranceMs),
    checkUnhandled(journal.unhandledRejections),
    checkOperationsEnded(journal),
    checkSecrets(journal, options.inspectedForSecrets),
  ];
}

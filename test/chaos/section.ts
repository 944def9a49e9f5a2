/**
 * One critical section of the workload: take a hold on a key, maybe re-enter it, do a racy
 * read-modify-write of the key's counter through the fenced store, maybe extend, maybe crash,
 * release — recording what the invariants need at every step.
 */
import {
  LockAbortedError,
  LockBackendError,
  LockClient,
  LockNotHeldError,
} from "../../src/index.js";
import { sleep as sleepMs } from "../../src/platform.js";
import { MIN_LEASE_MS } from "../../src/validate.js";
import type { ChaosConfig } from "./config.js";
import type { DeadHolderWatch } from "./dead-holders.js";
import type { FencedStore, WriteResult } from "./fenced-store.js";
import type { DeathCause, Journal } from "./journal.js";
import { type ArmingRequest, settledBefore } from "./killable-renewer.js";
import type { OperationRunner } from "./operations.js";
import type { ChaosHold, ChaosIsolate, ChaosPrimitive, HoldPlan } from "./primitive.js";
import { tracedAs } from "./wait-trace.js";

export interface SectionContext {
  readonly config: ChaosConfig;
  readonly journal: Journal;
  readonly operations: OperationRunner;
  readonly primitive: ChaosPrimitive;
  /** The longest one park of its waiters (longestParkMs); 0 where they poll. */
  readonly longestParkMs: number;
  readonly keys: readonly string[];
  /** Holds in hand now, by workload key (what an administrator would find stuck). */
  readonly held: Map<string, number>;
  /** Of those, the shared ones (read holds), by workload key. */
  readonly heldShared: Map<string, number>;
  readonly stores: ReadonlyMap<string, FencedStore>;
  /** The workload's seeded random source. */
  readonly random: () => number;
  /** Starts watching a holder that stopped without releasing. */
  bury(watch: DeadHolderWatch): void;
  /**
   * Runs a section as one request of nested scopes over two Workers clients (request-budget.ts),
   * in `config.requestRate` of the sections; undefined where the kind has no such pattern.
   */
  readonly runRequest?: (isolate: ChaosIsolate) => Promise<void>;
}

/** What one section will do, drawn up front so that a seed describes the whole section. */
interface SectionScript {
  readonly key: string;
  readonly plan: HoldPlan;
  readonly reenter: boolean;
  /** The inner hold's mode: mixed with the outer's. */
  readonly innerMode: HoldPlan["mode"];
  /** The inner hold (lease mode) extends to the shortest lease while the outer's is longer. */
  readonly innerShortExtend: boolean;
  readonly extend: boolean;
  readonly crash: "no" | "before-work" | "after-work";
  readonly holdMs: number;
}

function draw(ctx: SectionContext): SectionScript {
  const { config, random } = ctx;
  const key = ctx.keys[Math.floor(random() * ctx.keys.length)] ?? ctx.keys[0]!;
  const mode = random() < config.watchdogRate ? "watchdog" : "lease";
  const leaseMs = mode === "lease" ? config.leaseMs : config.watchdogTimeoutMs;
  const tryOnly = random() < config.tryRate;
  const reenter = random() < config.reentryRate;
  const innerMode = random() < config.watchdogRate ? "watchdog" : "lease";
  const innerShortExtend = innerMode === "lease" && random() < config.extendRate;
  const extend = mode === "lease" && random() < config.extendRate;
  const shared = random() < (ctx.primitive.sharedRate ?? 0);
  const crashes = random() < config.crashRate;
  const early = random() < 0.5;
  const long = random() < config.longHoldRate;
  const holdMs = long ? leaseMs * (0.6 + random() * 0.8) : random() * 3;
  return {
    key,
    plan: {
      owner: LockClient.newOwner(),
      mode,
      leaseMs,
      waitMs: tryOnly ? Math.floor(random() * 2) * config.leaseMs : config.waitMs,
      tryOnly,
      shared,
    },
    reenter,
    innerMode,
    innerShortExtend,
    extend,
    crash: crashes ? (early ? "before-work" : "after-work") : "no",
    holdMs,
  };
}

/** Re-sends on failure: the store's writes are idempotent by writer, its reads harmless. */
async function withRetries<T>(journal: Journal, action: () => Promise<T>): Promise<T | undefined> {
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      return await action();
    } catch {
      await sleepMs(10 * 2 ** attempt);
    }
  }
  journal.resourceErrors += 1;
  return undefined;
}

/**
 * What the tasks of one owner share while they run concurrently (a request scope): the checks
 * that concern the owner as a whole wait until every task is done.
 */
interface SiblingGroup {
  /** Tasks holding now. */
  holding: number;
  /** Keys the tasks asked for. */
  readonly keys: Set<string>;
  /** An acquisition may have taken a hold nobody knows (it failed in the network). */
  uncertain: boolean;
  /** A release could not be done. */
  releaseFailed: boolean;
  /** An acquisition gave up (aborted, timed out, busy): a late copy of it may still take a hold. */
  gaveUp: boolean;
  /** What each task did, for the report of a drift: `<kind> <key> <mode>: <outcome> @<ms>`. */
  readonly log: string[];
}

export async function runSection(ctx: SectionContext, isolate: ChaosIsolate): Promise<void> {
  // Drawn only where the pattern runs, so that other kinds' seeds replay as before.
  if (ctx.runRequest !== undefined && ctx.random() < ctx.config.requestRate) {
    return ctx.runRequest(isolate);
  }
  if (ctx.random() < ctx.config.siblingRate) return runSiblings(ctx, isolate);
  const script = draw(ctx);
  const killParked =
    ctx.primitive.parks === true &&
    script.crash === "no" &&
    !script.plan.tryOnly &&
    ctx.random() < (ctx.primitive.killParkedRate ?? ctx.config.killParkedRate);
  await runScript(ctx, isolate, script, { killParked });
}

/** A sibling group drawn otherwise than by default (a sub-task of a request, request-budget.ts). */
export interface SiblingShape {
  /** The group's owner (default: a fresh one). */
  readonly owner?: string;
  /** Tasks (default 2–3). */
  readonly count?: number;
  /** Every task waits (no tryAcquire) on this key (default: drawn, sometimes another). */
  readonly key?: string;
  /** Task i acquires through `clients[i % n]` (views of the isolate with another client). */
  readonly clients?: readonly ChaosIsolate[];
  /** Fraction of the tasks' waits given an AbortSignal (default `config.siblingAbortRate`). */
  readonly abortRate?: number;
  /** A task holds up to this many leases more than its drawn hold (default 0.15). */
  readonly holdLeases?: number;
}

/**
 * Several concurrent tasks sharing one owner, as the tasks of one `client.scope()` (or one Hono
 * request) do: each draws a section of its own — on the group's key or, now and then, another
 * one —, some with an AbortSignal that fires while they may still wait; they acquire
 * concurrently (re-entries of one hold when they meet on a key the owner holds), hold while
 * others wait, abort, and release while others still hold. They never crash (a crash kills the
 * whole process, owner and all: the plain sections do that).
 */
export async function runSiblings(
  ctx: SectionContext,
  isolate: ChaosIsolate,
  shape: SiblingShape = {},
): Promise<void> {
  const { journal, random, primitive, config } = ctx;
  const owner = shape.owner ?? LockClient.newOwner();
  const count = shape.count ?? 2 + Math.floor(random() * 2);
  const scripts = Array.from({ length: count }, (_, index) => {
    const drawn = draw(ctx);
    return {
      ...drawn,
      crash: "no" as const,
      key: shape.key ?? drawn.key,
      plan: {
        ...drawn.plan,
        owner,
        sibling: true,
        ...(shape.key === undefined ? {} : { tryOnly: false, waitMs: config.waitMs }),
      },
      // Staggered a little, and holding a while (a request's work): some meet on the key at
      // once, some join a sibling's hold or wait beside it, some release while another holds.
      startDelayMs: index === 0 ? 0 : random() * config.leaseMs * 0.2,
      holdMs: drawn.holdMs + random() * config.leaseMs * (shape.holdLeases ?? 0.15),
      abortAfterMs:
        random() < (shape.abortRate ?? config.siblingAbortRate)
          ? random() * config.leaseMs * 1.5
          : undefined,
      otherKey: random() < 0.3 && shape.key === undefined,
      // The task's client: the isolate's, or one of the shape's in turn.
      via: shape.clients?.[index % shape.clients.length] ?? isolate,
    };
  });
  const mainKey = scripts[0]!.key;
  const group: SiblingGroup = {
    holding: 0,
    keys: new Set(),
    uncertain: false,
    releaseFailed: false,
    gaveUp: false,
    log: [],
  };
  journal.patterns.siblingGroups += 1;
  journal.patterns.siblingTasks += count;
  isolate.track(owner);
  journal.planned.set(owner, primitive.keysOf?.(mainKey) ?? [mainKey]);
  await Promise.all(
    scripts.map(async (each) => {
      const key = each.otherKey && primitive.siblingsOnOneKey !== true ? each.key : mainKey;
      group.keys.add(key);
      await sleepMs(each.startDelayMs);
      let signal: AbortSignal | undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      if (each.abortAfterMs !== undefined && !each.plan.tryOnly) {
        const controller = new AbortController();
        signal = controller.signal;
        timer = setTimeout(() => controller.abort(), each.abortAfterMs);
        journal.patterns.abortArmed += 1;
      }
      try {
        await runScript(
          ctx,
          each.via,
          {
            ...each,
            key,
            plan: { ...each.plan, ...(signal === undefined ? {} : { signal }) },
          },
          { killParked: false, group },
        );
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  // Every task is done: the owner as a whole must hold nothing now, or be watched until its
  // holds expire when one may have been left behind.
  const now = Date.now();
  if (group.uncertain || group.releaseFailed) {
    isolate.crash(owner); // the scope is over: nothing of it renews or sends any more
    for (const key of group.keys) {
      bury(
        ctx,
        isolate,
        key,
        owner,
        group.releaseFailed ? "release-failed" : "acquire-failed",
        now,
        () => settledBefore(isolate.requestsOf(owner), now),
        Math.max(config.leaseMs, config.watchdogTimeoutMs),
      );
    }
    return;
  }
  for (const key of group.keys) {
    const stillHeld = await primitive.isHeldBy(key, owner);
    const copied = isolate.requestsOf(owner).some((request) => request.copy === true);
    // A leave never answered may not have run: its waiter's place and parked registration stay
    // until they time out, and a release may hand them a hold (documented: it lapses with the
    // grant's claim window, as a dead waiter's does). Only the leave itself: another request's
    // failure leaves no place behind, and a hold left then is drift.
    const leaveUnheard = isolate
      .requestsOf(owner)
      .some((request) => request.leave === true && request.failed === true);
    const gaveUpUnsure = group.gaveUp && (copied || leaveUnheard);
    if (stillHeld && (gaveUpUnsure || (primitive.databases ?? 1) > 1)) {
      // A late copy of an acquisition that gave up may take a hold after all (documented: it
      // expires with its lease); RedLock may leave a database's copy to its lease.
      const at = Date.now();
      bury(
        ctx,
        isolate,
        key,
        owner,
        gaveUpUnsure ? (copied ? "late-copy" : "leave-unheard") : "release-left-copy",
        at,
        () => at,
        Math.max(config.leaseMs, config.watchdogTimeoutMs),
      );
      continue;
    }
    const copies = isolate.requestsOf(owner).filter((request) => request.copy === true).length;
    const failed = isolate
      .requestsOf(owner)
      .filter((request) => request.failed === true)
      .map((request) => `${request.sentAt}–${request.settledAt}`);
    journal.releaseChecks.push({
      key,
      owner,
      stillHeld,
      context:
        `scope of ${count} tasks on ${[...group.keys].join(", ")}, checked at ${Date.now()}; ` +
        `${group.gaveUp ? "an acquisition gave up" : "no acquisition gave up"}, ${copies} late copies, ` +
        `${failed.length} failed requests${failed.length > 0 ? ` (${failed.join(", ")})` : ""}; ` +
        group.log.join("; ") +
        (stillHeld ? `; requests: ${isolate.requestsOf(owner).map(traced).join(" | ")}` : ""),
    });
  }
}

/** One request of a scope, as a violation's report shows it. */
function traced(request: ArmingRequest): string {
  const copy = request.copy ? " (copy)" : "";
  return `${request.sentAt}–${request.settledAt}${copy} ${request.trace ?? ""}`;
}

/** How long a hold a late copy (or a dead parked waiter's registration) takes may last, in ms. */
function orphanLeaseMs(ctx: SectionContext): number {
  const { config } = ctx;
  const lease = Math.max(config.leaseMs, config.watchdogTimeoutMs);
  // A late copy of a parking attempt registers a waiter again; a hand-off may reach that
  // registration (kept its park + 1 s) and grant the claim window to nobody.
  return ctx.primitive.parks === true
    ? Math.max(lease, ctx.longestParkMs + 1_000 + config.push.claimMs)
    : lease;
}

async function runScript(
  ctx: SectionContext,
  isolate: ChaosIsolate,
  script: SectionScript,
  { killParked, group }: { killParked: boolean; group?: SiblingGroup },
): Promise<void> {
  const { journal, operations, primitive } = ctx;
  const { key, plan } = script;
  const keys = primitive.keysOf?.(key) ?? [key];
  if (group === undefined) {
    journal.planned.set(plan.owner, keys);
    isolate.track(plan.owner);
  } else if (group.holding > 0) {
    journal.patterns.siblingWaitsBesideAHold += 1;
  }

  let disarm = () => {};
  const killed = new Promise<number>((resolve) => {
    if (killParked) disarm = isolate.killWhenParked(plan.owner, resolve);
  });
  const requestedAt = Date.now();
  const acquiring = operations.run(plan.tryOnly ? "tryAcquire" : "acquire", () =>
    primitive.acquire(isolate, key, plan),
  );
  const first = await Promise.race([acquiring, killed]);
  disarm();
  if (typeof first === "number") {
    // Killed while parked: its process is gone (whatever the library in it still does, nothing
    // leaves it). A hand-off may still reach its registration; the lock must pass on.
    journal.patterns.killedParked += 1;
    bury(
      ctx,
      isolate,
      key,
      plan.owner,
      "killed-parked",
      first,
      () => settledBefore(isolate.requestsOf(plan.owner), first),
      orphanLeaseMs(ctx),
    );
    return;
  }
  const acquired = first;
  const what = `${plan.tryOnly ? "tryAcquire" : "acquire"} ${key} ${plan.shared ? "read" : "exclusive"} ${plan.mode}${plan.signal ? " (abortable)" : ""}`;
  group?.log.push(
    `${what}: ${
      acquired.ok
        ? acquired.value === null
          ? "busy"
          : `ok, token ${acquired.value.fencingToken}`
        : acquired.hung
          ? "hung"
          : acquired.error instanceof Error
            ? acquired.error.name
            : "failed"
    } @${Date.now()}`,
  );
  if (!acquired.ok) {
    if (acquired.error instanceof LockAbortedError) journal.patterns.aborted += 1;
    if (group !== undefined) group.gaveUp = true;
    // An acquire that failed in the network may have taken the lock all the same.
    if (acquired.hung || acquired.error instanceof LockBackendError) {
      if (group !== undefined) {
        group.uncertain = true;
        return;
      }
      const failedAt = Date.now();
      bury(ctx, isolate, key, plan.owner, "acquire-failed", failedAt, () => failedAt, plan.leaseMs);
    }
    return;
  }
  const hold = acquired.value;
  if (hold === null) {
    if (group !== undefined) group.gaveUp = true;
    return;
  }
  if (group !== undefined) {
    group.holding += 1;
    if (group.holding > 1) journal.patterns.siblingsHoldingTogether += 1;
  }
  const counts = script.plan.shared ? [ctx.held, ctx.heldShared] : [ctx.held];
  for (const count of counts) count.set(key, (count.get(key) ?? 0) + 1);
  try {
    await holdAndRelease(ctx, isolate, script, hold, keys, group, requestedAt);
  } finally {
    if (group !== undefined) group.holding -= 1;
    for (const count of counts) {
      const left = (count.get(key) ?? 1) - 1;
      if (left > 0) count.set(key, left);
      else count.delete(key);
    }
  }
}

async function holdAndRelease(
  ctx: SectionContext,
  isolate: ChaosIsolate,
  script: SectionScript,
  hold: ChaosHold,
  keys: readonly string[],
  group: SiblingGroup | undefined,
  requestedAt: number,
): Promise<void> {
  const { journal, operations, primitive } = ctx;
  const { key, plan } = script;
  const start = Date.now();
  const validAtStart = hold.validUntil();
  let abortedAt = hold.signal.aborted ? start : Number.POSITIVE_INFINITY;
  hold.signal.addEventListener(
    "abort",
    () => {
      abortedAt = Math.min(abortedAt, Date.now());
    },
    { once: true },
  );
  recordToken(journal, key, hold);
  // Besides the hold's own arming requests, any request the library sent for the owner (a
  // handed-off hold's claim is one of its own).
  const armedSettledAt = (inner: ChaosHold | undefined, diedAt: number) =>
    Math.max(
      hold.lastArmedSettledAt(diedAt),
      inner?.lastArmedSettledAt(diedAt) ?? 0,
      settledBefore(isolate.requestsOf(hold.owner), diedAt),
    );

  await probe(ctx, keys);

  let inner: ChaosHold | undefined;
  let uncertainHolds = false;
  if (script.reenter && hold.reenter) {
    const reentry = { key, owner: hold.owner, startedAt: Date.now(), endedAt: Infinity };
    journal.sideAcquisitions.push(reentry);
    const reentered = await operations.run("reenter", () =>
      tracedAs(hold.owner, () => hold.reenter!(script.innerMode)),
    );
    reentry.endedAt = Date.now();
    if (reentered.ok) {
      inner = reentered.value;
      recordToken(journal, key, inner);
      if (inner.fencingToken !== hold.fencingToken) journal.reentriesAfterLoss += 1;
      // The nested-hold hazard: an inner hold asks for the shortest lease; the outer's must stand.
      if (script.innerShortExtend && inner.extend) {
        const innerHold = inner;
        await operations.run("extend", () => innerHold.extend!(MIN_LEASE_MS));
      }
    } else if (reentered.hung || reentered.error instanceof LockBackendError) {
      uncertainHolds = true; // it may have counted a second hold
      if (group !== undefined) group.uncertain = true;
    }
  }

  const finish = (end: number) => {
    if (hold.signal.aborted) journal.lostDuringSection += 1;
    const validEnd = Math.min(end, hold.validUntil(), abortedAt);
    const shared = hold.shared ?? false;
    for (const each of keys) {
      journal.sections.push({
        key: each,
        owner: hold.owner,
        token: each === key ? hold.fencingToken : undefined,
        requestedAt,
        start,
        end,
        validEnd,
        shared,
      });
    }
    journal.holds.push({
      keys,
      owner: hold.owner,
      shared,
      token: keys.length === 1 && keys[0] === key ? hold.fencingToken : undefined,
      mode: plan.mode,
      start,
      end,
      validAtStart,
      abortedAt: () => abortedAt,
      // Exclusive holds of one owner share one expiry, so the inner hold's re-arming requests
      // move the outer's end too (unless the re-entry found the hold gone and started a new one).
      // Read holds each keep their own.
      deadline: () =>
        Math.max(
          hold.confirmedDeadline(),
          inner !== undefined && !shared && inner.fencingToken === hold.fencingToken
            ? inner.confirmedDeadline()
            : Number.NEGATIVE_INFINITY,
        ),
    });
  };
  const crash = () => {
    const end = Date.now();
    hold.crash();
    finish(end);
    bury(
      ctx,
      isolate,
      key,
      hold.owner,
      "crash",
      end,
      () => armedSettledAt(inner, end),
      plan.leaseMs,
    );
  };

  if (script.crash === "before-work") return crash();
  await readModifyWrite(ctx, isolate, key, hold, script);
  if (script.crash === "after-work") return crash();
  finish(Date.now());

  const releasedAll = (await release(ctx, inner)) && (await release(ctx, hold));
  if (group !== undefined) {
    group.log.push(
      `released ${key} token ${hold.fencingToken}${inner ? " (and a re-entry)" : ""}: ${releasedAll ? "ok" : "failed"} @${Date.now()}`,
    );
    // The owner's other tasks may still hold: the group checks the owner once all are done.
    if (!releasedAll) group.releaseFailed = true;
    return;
  }
  if (!releasedAll) {
    hold.crash(); // stop renewing a hold we can no longer release: it must expire
    const failedAt = Date.now();
    bury(
      ctx,
      isolate,
      key,
      hold.owner,
      "release-failed",
      failedAt,
      () => armedSettledAt(inner, failedAt),
      plan.leaseMs,
    );
    return;
  }
  const stillHeld = await primitive.isHeldBy(key, hold.owner);
  if (stillHeld && uncertainHolds) {
    // The failed re-entry did count a hold after all: nobody knows it, so it must expire.
    const now = Date.now();
    bury(
      ctx,
      isolate,
      key,
      hold.owner,
      "acquire-failed",
      now,
      () => armedSettledAt(inner, now),
      plan.leaseMs,
    );
    return;
  }
  if (stillHeld && (primitive.databases ?? 1) > 1) {
    // A release that reached a majority (RedLock) may leave a database's copy to its lease.
    const now = Date.now();
    bury(ctx, isolate, key, hold.owner, "release-left-copy", now, () => now, plan.leaseMs);
    return;
  }
  const copies = isolate.requestsOf(hold.owner).filter((request) => request.copy === true).length;
  journal.releaseChecks.push({
    key,
    owner: hold.owner,
    stillHeld,
    context: `one task, held from ${start}, checked at ${Date.now()}; ${copies} late copies`,
  });
}

/** The racy part: read, pause, maybe extend, write read + 1 through the fencing check. */
async function readModifyWrite(
  ctx: SectionContext,
  isolate: ChaosIsolate,
  key: string,
  hold: ChaosHold,
  script: SectionScript,
): Promise<void> {
  const store = ctx.stores.get(key)!;
  const read = await withRetries(ctx.journal, () => store.read(isolate.redis));
  await sleepMs(script.holdMs);
  if (script.extend && hold.extend) {
    await ctx.operations.run("extend", () => hold.extend!(script.plan.leaseMs));
  }
  const token = hold.fencingToken;
  // A reader reads; only exclusive holds write.
  if (read === undefined || token === undefined || hold.shared) return;
  const written: WriteResult | undefined = await withRetries(ctx.journal, () =>
    store.write(isolate.redis, token, hold.owner, read + 1),
  );
  if (written) ctx.journal.writes.push({ key, owner: hold.owner, token, ...written });
}

/** Releases one hold, re-sending after backend failures. False when it could not be done. */
async function release(ctx: SectionContext, hold: ChaosHold | undefined): Promise<boolean> {
  if (hold === undefined) return true;
  for (let attempt = 0; attempt < 3; attempt++) {
    const released = await ctx.operations.run("release", () => hold.release());
    if (released.ok || released.error instanceof LockNotHeldError) return true;
    if (!(released.error instanceof LockBackendError)) return !released.hung;
  }
  return false;
}

/** Reads the hold's keys on the server right after the grant: the observer's own look. */
async function probe(ctx: SectionContext, keys: readonly string[]): Promise<void> {
  const sentAt = Date.now();
  try {
    const states = await ctx.primitive.state(keys);
    ctx.journal.samples.push({ sentAt, answeredAt: Date.now(), states });
  } catch {
    // The observer is fault-free; a failure only costs this probe.
  }
}

function recordToken(journal: Journal, key: string, hold: ChaosHold): void {
  // Read holds carry the last writer's token: shared by design.
  if (hold.fencingToken !== undefined && !hold.shared) {
    journal.tokens.push({ key, owner: hold.owner, token: hold.fencingToken });
  }
}

/**
 * Watches a holder that stopped: its hold must be gone one lease (`leaseMs`) after its last
 * arming request settled (`settledAt`), and, over several databases, one lease after each
 * database answered the last request naming the owner (`copyBound`); and a late copy of one of
 * its requests may arrive after all that: then one orphan lease after the last copy settled.
 */
function bury(
  ctx: SectionContext,
  isolate: ChaosIsolate,
  key: string,
  owner: string,
  cause: DeathCause,
  diedAt: number,
  settledAt: () => number,
  leaseMs: number,
): void {
  const { primitive } = ctx;
  const boundOf = () => {
    const settled = settledAt();
    const copies = primitive.copyBound?.(owner, leaseMs) ?? Number.NEGATIVE_INFINITY;
    let late = Number.NEGATIVE_INFINITY;
    for (const request of isolate.requestsOf(owner)) {
      if (request.copy !== true) continue;
      late = Math.max(late, (request.settledAt ?? Number.POSITIVE_INFINITY) + orphanLeaseMs(ctx));
    }
    return Math.max(settled + leaseMs, copies, late);
  };
  const record = {
    key,
    owner,
    cause,
    diedAt,
    boundAt: boundOf(),
    lastSeenHeldAt: null,
    freedAt: null,
  };
  ctx.journal.dead.push(record);
  ctx.bury({
    record,
    boundOf,
    describe: () =>
      `died at ${diedAt}; requests: ${isolate.requestsOf(owner).map(traced).join(" | ")}`,
  });
}

/**
 * The chaos workload: isolates × holders run critical sections on a few keys through the faulty
 * REST server (refused requests, lost responses, latency spikes past the lease, crashing holders)
 * until the operation target is reached; then every dead holder is watched until its lock is
 * free, the final state is read through the fault-free observer, and the invariants are checked.
 */
import { createPrng } from "../../dev/rest/faults.js";
import { QUEUE_DEFAULTS } from "../../src/defaults.js";
import { GRANT_PARK_SHARE } from "../../src/hold/queue/hand-off.js";
import { sleep as sleepMs } from "../../src/platform.js";
import { PARK_GRACE_MS } from "../../src/wait/push/parking.js";
import {
  type CapacityChangeRecord,
  type CapacityCounts,
  canFit,
  capacityCeiling,
  capacityCounts,
  checkCapacityErrors,
  checkGrantsWithinCapacity,
  freeForWaiters,
  startCapacityChanges,
} from "./capacity-changes.js";
import { type ChaosConfig, longestParkMs } from "./config.js";
import { type DeadHolderWatch, watchDeadHolder } from "./dead-holders.js";
import {
  type ChaosEnvironment,
  createIsolate,
  type EnvironmentOptions,
  startEnvironment,
} from "./environment.js";
import { FencedStore } from "./fenced-store.js";
import {
  askedInTimeAnsweredLate,
  checkAll,
  checkGrantsKept,
  checkLiveness,
  type IdleStretch,
  type InvariantResult,
  idleStretches,
  liveUntil,
  takenByLateCopy,
} from "./invariants.js";
import {
  Journal,
  type LivenessExcuse,
  type OperationKind,
  type PatternCounts,
  type WaitRecord,
} from "./journal.js";
import { type ChaosKind, KINDS } from "./kinds.js";
import type { LateCopyCounts } from "./late-copies.js";
import { LoopLag } from "./loop-lag.js";
import { OperationRunner } from "./operations.js";
import type { ChaosIsolate, ChaosPrimitive } from "./primitive.js";
import { type ReaderCounts, startReadersAroundWriter } from "./readers-around-writer.js";
import {
  ConnectionBudget,
  type RequestBudgetCounts,
  requestFigures,
  runRequest,
} from "./request-budget.js";
import { runSection, type SectionContext } from "./section.js";
import { startSampler } from "./server-state.js";
import { startSpikes } from "./spikes.js";
import { tracedAs } from "./wait-trace.js";

/** Slack for clock granularity when checking a dead holder's bound, in ms. */
const BOUND_TOLERANCE_MS = 25;

/** What the faulty servers did to a run's requests. */
export interface RequestCounts {
  readonly total: number;
  readonly failedBeforeExecute: number;
  readonly droppedAfterExecute: number;
  readonly delayedBySpike: number;
  readonly spikes: number;
  /** Hung until the client gave up: never forwarded / forwarded and answer withheld. */
  readonly hungBeforeExecute: number;
  readonly hungAfterExecute: number;
  /** (refused + dropped + delayed + hung) / total (total: requests the proxies received). */
  readonly faultedFraction: number;
}

export interface ChaosResult {
  readonly config: ChaosConfig;
  readonly primitive: string;
  /** What the primitive's own machinery did (the Durable Object watchdog's renewals). */
  readonly primitiveFigures?: Readonly<Record<string, number>>;
  readonly backend: string;
  /** Readings of the server state (sampler and grant probes). */
  readonly samples: number;
  readonly startedAt: string;
  readonly elapsedMs: number;
  /** The most the harness's own timers fired late (event loop blocked: a loaded machine). */
  readonly timerLatenessMs: number;
  readonly operations: {
    readonly total: number;
    readonly byKind: Readonly<Record<OperationKind, number>>;
    /** How operations ended, e.g. `{ "acquire: ok": 1200, "release: LockNotHeldError": 3 }`. */
    readonly outcomes: Readonly<Record<string, number>>;
    readonly perSecond: number;
  };
  readonly sections: number;
  readonly requests: RequestCounts;
  readonly resource: {
    readonly acceptedWrites: number;
    readonly refusedStaleWrites: number;
    readonly replayedWrites: number;
    /** Accepted writes the racy counter lost (only holders past their lease can cause them). */
    readonly lostUpdates: number;
    readonly requestsFailed: number;
  };
  readonly holds: {
    readonly lostDuringSection: number;
    readonly reentriesAfterLoss: number;
    readonly events: Readonly<Record<string, number>>;
  };
  readonly deadHolders: {
    readonly total: number;
    readonly byCause: Readonly<Record<string, number>>;
    /** Longest time from a holder's death to its lock first seen free (an upper estimate), ms. */
    readonly longestHeldMs: number;
    /** Longest time from a holder's death to its lock last seen still held (a lower one), ms. */
    readonly longestSeenHeldMs: number;
    /**
     * Latest sighting of a dead holder's lock still held, relative to its bound, in ms: at most
     * the tolerance (25 ms) when every lock came free in time; negative means early.
     */
    readonly latestSightingPastBoundMs: number;
  };
  /** What the kind offers the patterns below: force releases, parked waiters (push). */
  readonly can: { readonly forceRelease: boolean; readonly parks: boolean };
  /** How often the run met each pattern of round 3 (scope siblings, admin, late copies, kills). */
  readonly patterns: PatternCounts & {
    /** Administrator force releases sent, and those that deleted a hold. */
    readonly forceReleases: number;
    readonly forceReleasesThatFreed: number;
    readonly lateCopies: LateCopyCounts;
  };
  /** Read holds taken around parked writers (rw-sub; see readers-around-writer.ts). */
  readonly readersAroundWriter?: ReaderCounts;
  /** Requests of nested scopes over two Workers clients, under the connection budget. */
  readonly requestBudget?: RequestBudgetCounts;
  /** What the liveness check measured (kinds it applies to). */
  readonly liveness?: LivenessFigures;
  /** An administrator's capacity changes under parked waiters (semaphores; capacity-changes.ts). */
  readonly capacityChanges?: CapacityCounts;
  readonly invariants: readonly InvariantResult[];
  readonly violations: number;
}

/** The liveness check's figures: waits, idle stretches seen, and what excused the long ones. */
export interface LivenessFigures {
  /** `acquire` calls that waited (not tryAcquire, not re-entries). */
  readonly waits: number;
  /** Idle stretches (a key free for its waiters while one of them was live), and the longest. */
  readonly idleStretches: number;
  readonly longestIdleMs: number;
  /** Of the stretches, those longer than the base bound (each excused, or a violation). */
  readonly pastBaseExcused: number;
  /** Base bound used (push or poll), in ms. */
  readonly baseMs: number;
  /** Excuses recorded, by what. */
  readonly excuses: Readonly<Record<string, number>>;
}

export interface ChaosRunOptions {
  /** The kind under test. Default: the reentrant lock. */
  readonly kind?: ChaosKind;
  /** Builds the primitive under test instead of the kind's adapter (sabotage tests). */
  readonly primitive?: (env: ChaosEnvironment) => ChaosPrimitive;
  /** Called as operations start. */
  readonly onProgress?: (operationsStarted: number) => void;
}

export async function runChaos(
  given: ChaosConfig,
  options: ChaosRunOptions = {},
): Promise<ChaosResult> {
  const config = options.kind?.tune?.(given) ?? given;
  const env = await startEnvironment({
    ...config,
    maxHangMs: config.requestTimeoutMs * 4,
    databases: (options.kind ?? KINDS.lock).databases,
    lateCopies: config.lateCopies,
    ...subscribingOf(options.kind ?? KINDS.lock, config),
  });
  try {
    return await runIn(env, config, options);
  } finally {
    await env.close();
  }
}

async function runIn(
  env: ChaosEnvironment,
  config: ChaosConfig,
  options: ChaosRunOptions,
): Promise<ChaosResult> {
  const journal = new Journal();
  const operations = new OperationRunner(journal, env.server.token, config.hangAfterMs);
  const kind: ChaosKind = options.kind ?? KINDS.lock;
  const primitive = recordingWaits(options.primitive?.(env) ?? kind.create(env, config), journal);
  const keys = Array.from({ length: config.keys }, (_, i) => `key-${i}`);
  const stores = new Map(keys.map((key) => [key, new FencedStore(`${env.prefix}-store`, key)]));
  const watches: Promise<void>[] = [];
  // The request pattern: its connections counted by request from the global fetch on.
  const budget =
    kind.requests === true && options.primitive === undefined && config.requestRate > 0
      ? new ConnectionBudget()
      : undefined;
  const workersClients = new Map<number, readonly [ChaosIsolate, ChaosIsolate]>();
  const longestPark =
    primitive.parks === true ? longestParkMs(config, kind.subscribes === true) : 0;
  const context: SectionContext = {
    config,
    journal,
    operations,
    primitive,
    longestParkMs: longestPark,
    keys,
    held: new Map(),
    heldShared: new Map(),
    stores,
    random: createPrng(config.seed ^ 0x9e3779b9),
    bury: (watch: DeadHolderWatch) => {
      watches.push(watchDeadHolder(primitive, watch, config.probeIntervalMs, config.giveUpAfterMs));
    },
    ...(budget === undefined
      ? {}
      : { runRequest: (isolate) => runRequest(context, isolate, budget, workersClients) }),
  };
  const isolates = Array.from({ length: config.isolates }, (_, id) =>
    createIsolate(env, id, config, primitive.renewal?.()),
  );
  for (const isolate of isolates) {
    isolate.client.on("lockLost", (event) => operations.inspectEvent(event));
    isolate.client.on("renewalFailed", (event) => operations.inspectEvent(event));
  }
  const onUnhandled = () => {
    journal.unhandledRejections += 1;
  };
  process.on("unhandledRejection", onUnhandled);

  for (const { server } of env.databases) {
    server.stats.reset();
    server.faults.resetCounts();
  }
  const hangsBefore = env.hangs();
  const loopLag = new LoopLag();
  loopLag.start();
  const startedAt = new Date();
  const spikes = startSpikes(
    env.databases.map(({ server }) => server.faults),
    config.spike,
  );
  const sampledKeys = [...new Set(keys.flatMap((key) => primitive.keysOf?.(key) ?? [key]))];
  const sampler = startSampler(
    (keys) => primitive.state(keys),
    sampledKeys,
    config.sampleIntervalMs,
  );
  const admin = startForceReleases(context, isolates, config);
  const resizing =
    primitive.adjustableCapacity !== undefined && options.primitive === undefined
      ? startCapacityChanges(
          env,
          keys,
          primitive.adjustableCapacity.base,
          primitive.adjustableCapacity.max,
          config.capacityChanges,
          config.seed,
          config.requestTimeoutMs,
        )
      : undefined;
  const readers =
    kind.subscribes === true && options.primitive === undefined
      ? startReadersAroundWriter(primitive, journal, isolates, keys, config, context.bury)
      : undefined;
  try {
    const holder = async (isolate: (typeof isolates)[number]) => {
      while (journal.totalOperations < config.operations) {
        await runSection(context, isolate);
        options.onProgress?.(journal.totalOperations);
      }
    };
    await Promise.all(
      isolates.flatMap((isolate) =>
        Array.from({ length: config.holdersPerIsolate }, () => holder(isolate)),
      ),
    );
  } finally {
    await admin.stop();
    await resizing?.stop();
    await readers?.stop();
    // Copies still pending never arrive; those in flight are waited for (with the faults on).
    await env.lateCopies.stop();
    spikes.stop();
    await sampler.stop();
    loopLag.stop();
    budget?.stop();
  }
  const elapsedMs = Date.now() - startedAt.getTime();
  const faults = { failBeforeExecute: 0, dropAfterExecute: 0, delayed: 0 };
  for (const { server, proxy } of env.databases) {
    const counts = server.faults.counts();
    faults.failBeforeExecute += counts.failBeforeExecute;
    faults.dropAfterExecute += counts.dropAfterExecute;
    faults.delayed += counts.delayed;
    server.faults.disable();
    proxy.disable();
  }
  const hangsAfter = env.hangs();
  const hangs = {
    requests: hangsAfter.requests - hangsBefore.requests,
    before: hangsAfter.hungBeforeExecute - hangsBefore.hungBeforeExecute,
    after: hangsAfter.hungAfterExecute - hangsBefore.hungAfterExecute,
  };
  journal.samples.push(...sampler.samples);

  await Promise.all(watches);
  // A late copy that took a hold for an acquisition that gave up holds it one lease at most:
  // until then a key still held is asked again (most runs find every key free at once).
  const orphanEndsAt =
    env.lateCopies.lastSettledAt +
    Math.max(
      config.leaseMs,
      config.watchdogTimeoutMs,
      primitive.parks === true ? longestPark + 1_000 + config.push.claimMs : 0,
    ) +
    BOUND_TOLERANCE_MS;
  let leftHeld: { key: string; owners: string[] }[];
  for (;;) {
    const askedAt = Date.now();
    leftHeld = await Promise.all(
      keys.map(async (key) => ({ key, owners: await primitive.holders(key) })),
    );
    if (leftHeld.every(({ owners }) => owners.length === 0) || askedAt > orphanEndsAt) break;
    await sleepMs(config.probeIntervalMs);
  }
  const totals = await Promise.all(keys.map((key) => stores.get(key)!.totals(env.observer.redis)));
  const liveness = livenessOf(
    env,
    config,
    primitive,
    longestPark,
    journal,
    isolates,
    spikes.startedAt,
    loopLag,
    // FIFO kinds told by word: their grants must outlive a park whose word was lost.
    options.primitive === undefined &&
      config.checkGrantsKept &&
      kind.subscribes === true &&
      (kind.fair === true || primitive.capacity > 1),
    resizing?.changes,
  );
  process.off("unhandledRejection", onUnhandled);
  primitive.close?.();

  const invariants = [
    ...checkAll(journal, {
      capacity: primitive.capacity,
      toleranceMs: BOUND_TOLERANCE_MS,
      leftHeld,
      inspectedForSecrets: operations.inspected,
      signalSlackMs: config.signalSlackMs + (primitive.lossReportSlackMs ?? 0),
      lateness: (from, to) => loopLag.lateness(from, to),
      fair: kind.fair === true && options.primitive === undefined,
      multi: kind.multi === true && options.primitive === undefined,
    }),
    ...(liveness?.results ?? []),
    ...(primitive.checks?.(journal, { lateness: (from, to) => loopLag.lateness(from, to) }) ?? []),
    ...(budget === undefined ? [] : [budget.result()]),
  ];
  const writes = (status: string) => journal.writes.filter((w) => w.status === status).length;
  const accepted = totals.reduce((sum, t) => sum + t.accepted, 0);
  const finalValues = totals.reduce((sum, t) => sum + t.value, 0);
  const freed = journal.dead.filter((d) => d.freedAt !== null);
  const seen = journal.dead.filter((d) => d.lastSeenHeldAt !== null);
  const primitiveFigures =
    budget === undefined
      ? primitive.figures?.()
      : { ...primitive.figures?.(), ...requestFigures(budget.counts) };
  return {
    config,
    primitive: primitive.name,
    ...(primitiveFigures === undefined ? {} : { primitiveFigures }),
    timerLatenessMs: loopLag.worstMs,
    samples: journal.samples.length,
    backend: env.server.backendDescription,
    startedAt: startedAt.toISOString(),
    elapsedMs,
    operations: {
      total: journal.totalOperations,
      byKind: { ...journal.operations },
      outcomes: Object.fromEntries([...journal.outcomes].sort()),
      perSecond: Math.round((journal.totalOperations / Math.max(1, elapsedMs)) * 1000),
    },
    sections: journal.sections.length,
    requests: {
      total: hangs.requests,
      failedBeforeExecute: faults.failBeforeExecute,
      droppedAfterExecute: faults.dropAfterExecute,
      delayedBySpike: faults.delayed,
      spikes: spikes.count,
      hungBeforeExecute: hangs.before,
      hungAfterExecute: hangs.after,
      faultedFraction:
        hangs.requests === 0
          ? 0
          : (faults.failBeforeExecute +
              faults.dropAfterExecute +
              faults.delayed +
              hangs.before +
              hangs.after) /
            hangs.requests,
    },
    resource: {
      acceptedWrites: accepted,
      refusedStaleWrites: writes("refused"),
      replayedWrites: writes("replayed"),
      lostUpdates: accepted - finalValues,
      requestsFailed: journal.resourceErrors,
    },
    holds: {
      lostDuringSection: journal.lostDuringSection,
      reentriesAfterLoss: journal.reentriesAfterLoss,
      events: Object.fromEntries(journal.events),
    },
    deadHolders: {
      total: journal.dead.length,
      byCause: countBy(journal.dead.map((d) => d.cause)),
      longestHeldMs: Math.max(0, ...freed.map((d) => d.freedAt! - d.diedAt)),
      longestSeenHeldMs: Math.max(0, ...seen.map((d) => d.lastSeenHeldAt! - d.diedAt)),
      latestSightingPastBoundMs:
        seen.length === 0 ? 0 : Math.max(...seen.map((d) => d.lastSeenHeldAt! - d.boundAt)),
    },
    can: { forceRelease: primitive.forceRelease !== undefined, parks: primitive.parks === true },
    ...(liveness === undefined ? {} : { liveness: liveness.figures }),
    ...(budget === undefined ? {} : { requestBudget: { ...budget.counts } }),
    ...(liveness?.capacity === undefined ? {} : { capacityChanges: liveness.capacity }),
    ...(readers === undefined || readers.counts.rounds === 0
      ? {}
      : { readersAroundWriter: readers.counts }),
    patterns: {
      ...journal.patterns,
      forceReleases: journal.forceReleases.length,
      forceReleasesThatFreed: journal.forceReleases.filter((each) => each.deleted === true).length,
      lateCopies: env.lateCopies.counts(),
    },
    invariants,
    violations: invariants.reduce((sum, result) => sum + result.violations, 0),
  };
}

/**
 * The administrator: every `forceReleaseEveryMs` on average (the first a quarter of that in),
 * a force release through a random isolate's (faulty) client, for kinds that have one: of a key
 * some section holds now (80 %, when there is one), else of a random key. Each is recorded with when it was sent and settled: it took effect, if at all, in
 * between.
 */
function startForceReleases(
  context: SectionContext,
  isolates: readonly ChaosIsolate[],
  config: ChaosConfig,
): { stop(): Promise<void> } {
  const { primitive, journal, keys } = context;
  const random = createPrng(config.seed ^ 0x0f0dce);
  const pending = new Set<Promise<void>>();
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
  const loop = (async () => {
    if (primitive.forceRelease === undefined || config.forceReleaseEveryMs <= 0) return;
    await pause(config.forceReleaseEveryMs / 4);
    while (!stopped) {
      // Mostly a key someone holds now (a lock an operator found stuck), else any key.
      const held = [...context.held.keys()];
      const among = held.length > 0 && random() < 0.8 ? held : keys;
      const key = among[Math.floor(random() * among.length)] ?? keys[0]!;
      const isolate = isolates[Math.floor(random() * isolates.length)] ?? isolates[0]!;
      const sentAt = Date.now();
      const heldAs = !context.held.has(key)
        ? undefined
        : (context.heldShared.get(key) ?? 0) < (context.held.get(key) ?? 0)
          ? "exclusive"
          : "shared";
      const { target, done } = primitive.forceRelease(isolate, key, random, heldAs);
      const record = { ...target, sentAt, settledAt: Number.POSITIVE_INFINITY, deleted: undefined };
      const entry: (typeof journal.forceReleases)[number] = record;
      journal.forceReleases.push(entry);
      const settled = done
        .then(
          (deleted) => {
            entry.deleted = deleted;
          },
          () => {},
        )
        .finally(() => {
          entry.settledAt = Date.now();
          pending.delete(settled);
        });
      pending.add(settled);
      await pause(config.forceReleaseEveryMs * (0.5 + random()));
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake();
      await loop;
      await Promise.all([...pending]);
    },
  };
}

/**
 * The primitive with every waiting `acquire` (not a tryAcquire; re-entries go through the hold)
 * recorded in the journal: when it started and returned, when its signal fired, what it got.
 */
function recordingWaits(primitive: ChaosPrimitive, journal: Journal): ChaosPrimitive {
  return {
    ...primitive,
    async acquire(isolate, key, plan) {
      if (plan.tryOnly) {
        const attempt = { key, owner: plan.owner, startedAt: Date.now(), endedAt: Infinity };
        journal.sideAcquisitions.push(attempt);
        try {
          return await tracedAs(plan.owner, () => primitive.acquire(isolate, key, plan));
        } finally {
          attempt.endedAt = Date.now();
        }
      }
      const wait: WaitRecord = {
        key,
        owner: plan.owner,
        isolate: isolate.id,
        shared: plan.shared,
        ...(primitive.demandOf === undefined ? {} : { permits: primitive.demandOf(plan) }),
        waitMs: plan.waitMs,
        startedAt: Date.now(),
        endedAt: Number.POSITIVE_INFINITY,
        abortedAt: Number.POSITIVE_INFINITY,
        token: undefined,
      };
      journal.waits.push(wait);
      const onAbort = () => {
        wait.abortedAt = Math.min(wait.abortedAt, Date.now());
      };
      if (plan.signal?.aborted) onAbort();
      plan.signal?.addEventListener("abort", onAbort, { once: true });
      try {
        const hold = await tracedAs(plan.owner, () => primitive.acquire(isolate, key, plan));
        wait.token = hold?.fencingToken;
        return hold;
      } catch (error) {
        wait.error = error instanceof Error ? error.name : "thrown";
        throw error;
      } finally {
        wait.endedAt = Date.now();
        plan.signal?.removeEventListener("abort", onAbort);
      }
    },
  };
}

/**
 * The liveness check of a run (single-database kinds whose readings have one key per workload
 * key): the idle stretches the observer saw, and what may excuse each — the park-costing faults
 * on the subscription, a waiter killed while parked or a waiter's request that failed (its
 * registration or place left behind: its park + grace + claim window, or the waiter timeout for
 * polling kinds), a latency spike (its length and latency).
 */
function livenessOf(
  env: ChaosEnvironment,
  config: ChaosConfig,
  primitive: ChaosPrimitive,
  longestPark: number,
  journal: Journal,
  isolates: readonly ChaosIsolate[],
  spikes: readonly number[],
  loopLag: LoopLag,
  fifo: boolean,
  capacityChanges?: readonly CapacityChangeRecord[],
): { results: InvariantResult[]; figures: LivenessFigures; capacity?: CapacityCounts } | undefined {
  if ((primitive.databases ?? 1) > 1 || primitive.keysOf !== undefined) return undefined;
  const push = primitive.parks === true;
  const parkMs = longestPark + config.push.claimMs;
  // A registration nobody ends (its waiter dead, its leave lost) keeps its place this long; a
  // polling waiter's place is kept until the waiter timeout prunes it.
  const orphanMs = push ? longestPark + PARK_GRACE_MS + config.push.claimMs : 5_000;
  const excuses: LivenessExcuse[] = [...journal.excuses];
  for (const fault of env.subscriptions?.parkCosts ?? []) {
    excuses.push({ ...fault, until: fault.at + parkMs });
  }
  for (const at of spikes) {
    excuses.push({
      key: undefined,
      at,
      until: at + config.spike.durationMs + config.spike.latencyMs,
      what: "a latency spike",
    });
  }
  const waits = journal.waits.map((wait) => {
    const isolate = isolates[wait.isolate]!;
    const crashedAt = isolate.crashedAt(wait.owner);
    if (crashedAt !== undefined && crashedAt < wait.endedAt) {
      excuses.push({
        key: wait.key,
        at: crashedAt,
        until: crashedAt + orphanMs,
        what: "a waiter killed",
      });
    }
    return { ...wait, liveUntil: liveUntil(wait, crashedAt) };
  });
  for (const wait of waits) {
    for (const request of isolates[wait.isolate]!.requestsOf(wait.owner)) {
      if (request.failed !== true && request.copy !== true) continue;
      if (request.sentAt < wait.startedAt || request.sentAt > wait.endedAt) continue;
      const settledAt = request.settledAt ?? Number.POSITIVE_INFINITY;
      // A failure the waiter rides out costs it its next attempt (push: the park it was part
      // of; a failed blocking pop, the word of a hand-off it may have taken); one it does not
      // outlive (it gave up, was killed), or a late copy that registers it again, leaves its
      // place and registration to time out.
      const orphaned = request.copy === true || settledAt >= wait.liveUntil;
      excuses.push({
        key: wait.key,
        // Ridden out: it slows its own waiter only.
        ...(orphaned ? {} : { owner: wait.owner }),
        at: request.sentAt,
        until: settledAt + (orphaned ? orphanMs : push ? parkMs : 0),
        what:
          request.copy === true
            ? "a late copy of a waiter's request"
            : orphaned
              ? "a request failed as its waiter gave up"
              : request.park === true
                ? "a waiter's blocking pop failed"
                : "a waiter's request failed",
      });
    }
  }
  const capacity = primitive.capacity;
  // A semaphore's readings carry its capacity: permits that fit the waiter next in line, at the
  // capacity of that moment (a waiter asking more than it waits for no permit).
  const stretches: IdleStretch[] = idleStretches(
    journal.samples,
    waits,
    (state, live) =>
      state.capacity !== undefined
        ? freeForWaiters(state, live)
        : capacity === 1
          ? state.holders.size === 0
          : state.holders.size < capacity,
    canFit,
  );
  const baseMs = push ? config.liveness.pushIdleMs : config.liveness.pollIdleMs;
  const result = checkLiveness(stretches, excuses, {
    baseMs,
    lateness: (from, to) => loopLag.lateness(from, to),
  });
  // FIFO kinds: a grant to a live waiter is its hold. A wait with a failed request of its own
  // (what it did is unknown), met by a force release of its key, or beside a try or re-entry of
  // its owner on its key (a waiter of its own) is not checked.
  // Holds some call returned (acquisitions, re-entries, tryAcquire): a sibling's, not a grant.
  const returnedTokens = new Set(
    journal.tokens.map((each) => `${each.key}\n${each.owner}\n${each.token}`),
  );
  let grantsExcusedByLateTimers = 0;
  let grantsExcusedBySlowRequests = 0;
  let grantsTakenByLateCopies = 0;
  const grantsKept = fifo
    ? checkGrantsKept(
        journal.samples,
        waits,
        (wait) => {
          const failed = isolates[wait.isolate]!.requestsOf(wait.owner).some(
            (request) =>
              request.failed === true &&
              request.sentAt >= wait.startedAt &&
              request.sentAt <= wait.endedAt,
          );
          const forced = journal.forceReleases.some(
            (release) =>
              release.keys.includes(wait.key) &&
              release.sentAt <= wait.endedAt &&
              release.settledAt >= wait.startedAt,
          );
          // A try or re-entry of the same owner on the key meanwhile (a sibling's) waits as a
          // waiter of its own: a grant the observer sees for the owner may be that one's.
          const beside = journal.sideAcquisitions.some(
            (other) =>
              other.key === wait.key &&
              other.owner === wait.owner &&
              other.startedAt <= wait.endedAt &&
              other.endedAt >= wait.startedAt,
          );
          return failed || forced || beside;
        },
        (wait, seenAt) => {
          // A spike that began before the claim window closed: the claim (or the answer that
          // would lead to it) may be held up past the window.
          if (
            spikes.some(
              (at) =>
                at <= seenAt + config.push.claimMs &&
                seenAt <= at + config.spike.durationMs + config.spike.latencyMs,
            )
          ) {
            return true;
          }
          // A parked waiter wakes within GRANT_PARK_SHARE of its grant's claim window; timers
          // later than the rest of it (the harness's own event loop, loaded) let the grant lapse
          // before the client could act: the machine's, not the library's to keep.
          const { claimMs } = config.push;
          if (
            loopLag.lateness(seenAt - claimMs, seenAt + claimMs) >
            claimMs * (1 - GRANT_PARK_SHARE)
          ) {
            grantsExcusedByLateTimers += 1;
            return true;
          }
          if (
            askedInTimeAnsweredLate(
              isolates[wait.isolate]!.requestsOf(wait.owner),
              seenAt,
              claimMs,
              (from, to) => loopLag.lateness(from, to),
            )
          ) {
            grantsExcusedBySlowRequests += 1;
            return true;
          }
          return false;
        },
        // A hold another call of the owner returned, or one a late copy of its own request took
        // that it could not have known of before its lease ran out: not a grant to this wait.
        (wait, token) => {
          if (returnedTokens.has(`${wait.key}\n${wait.owner}\n${token}`)) return true;
          const requests = isolates[wait.isolate]!.requestsOf(wait.owner);
          if (!takenByLateCopy(requests, token, config.leaseMs)) return false;
          grantsTakenByLateCopies += 1;
          return true;
        },
        (wait, seenAt) => {
          const faults = (env.subscriptions?.parkCosts ?? []).filter(
            (fault) =>
              fault.key === wait.key &&
              fault.at >= wait.startedAt &&
              fault.at <= wait.endedAt &&
              (fault.owner === wait.owner ||
                (fault.owner === undefined && fault.isolate === wait.isolate)),
          );
          // Its requests meanwhile (copies included), so that the case explains itself.
          const requests = isolates[wait.isolate]!.requestsOf(wait.owner)
            .filter((request) => request.sentAt >= wait.startedAt && request.sentAt <= wait.endedAt)
            .map(
              (request) =>
                `${request.sentAt}–${request.settledAt ?? "?"}${request.copy === true ? " (copy)" : ""} ${request.trace ?? "?"}`,
            );
          return (
            ` (timers up to ${loopLag.lateness(seenAt - config.push.claimMs, wait.endedAt)} ms late meanwhile; ` +
            `its stream's faults: ${faults.map((fault) => `${fault.what} at ${fault.at}`).join(", ") || "none"}; ` +
            `its requests: ${requests.join("; ") || "none"})`
          );
        },
      )
    : undefined;
  // A capacity changed under waiters: holds granted within the capacity of their moment, and a
  // waiter asking more than it asks again within its park bound (semaphore.md: three quarters of
  // a grant's lease, so within the lease) or, polling or not yet parked, its sleep (at most the
  // soonest lease end, and at most a third of waiterTimeoutMs), plus the base bound for round
  // trips.
  const capacityErrorBoundMs =
    Math.max(
      config.leaseMs,
      config.watchdogTimeoutMs,
      Math.floor(QUEUE_DEFAULTS.waiterTimeoutMs / 3),
    ) + baseMs;
  const baseCapacity = primitive.adjustableCapacity?.base;
  const resized =
    capacityChanges === undefined || baseCapacity === undefined
      ? undefined
      : {
          results: [
            checkGrantsWithinCapacity(
              journal.samples,
              capacityChanges,
              baseCapacity,
              BOUND_TOLERANCE_MS,
            ),
            checkCapacityErrors(journal.samples, waits, {
              requestsOf: (wait) => isolates[wait.isolate]!.requestsOf(wait.owner),
              capacityAt: (key, from, to) =>
                capacityCeiling(capacityChanges, key, baseCapacity, from, to),
              silenceMs: capacityErrorBoundMs,
              answerMs: baseMs,
              lateness: (from, to) => loopLag.lateness(from, to),
            }),
          ],
          counts: capacityCounts(capacityChanges, baseCapacity, waits),
        };
  const byWhat: Record<string, number> = {};
  for (const excuse of excuses) byWhat[excuse.what] = (byWhat[excuse.what] ?? 0) + 1;
  if (grantsExcusedByLateTimers > 0) {
    byWhat["a grant while timers ran later than its park's margin"] = grantsExcusedByLateTimers;
  }
  if (grantsTakenByLateCopies > 0) {
    byWhat["a hold a late copy of the waiter's request took, unknown to it past its lease"] =
      grantsTakenByLateCopies;
  }
  if (grantsExcusedBySlowRequests > 0) {
    byWhat["a grant whose waiter asked in time, answered past its window"] =
      grantsExcusedBySlowRequests;
  }
  return {
    ...(resized === undefined ? {} : { capacity: resized.counts }),
    results: [
      result,
      ...(grantsKept === undefined ? [] : [grantsKept]),
      ...(resized?.results ?? []),
    ],
    figures: {
      waits: waits.length,
      idleStretches: stretches.length,
      longestIdleMs: Math.max(0, ...stretches.map((stretch) => stretch.to - stretch.from)),
      pastBaseExcused: stretches.filter((stretch) => stretch.to - stretch.from > baseMs).length,
      baseMs,
      excuses: byWhat,
    },
  };
}

/** A kind woken over a subscription: its servers' profile, and the faults on its streams. */
function subscribingOf(
  kind: ChaosKind,
  config: ChaosConfig,
): Pick<EnvironmentOptions, "profile" | "subscriptionFaults"> {
  if (kind.subscribes !== true) return {};
  return subscriptionEnvironment(config);
}

/**
 * The environment of a run whose isolates wait over a subscription (the `*-sub` kinds,
 * `latch-sub`): the `upstash` profile, and the run's faults on their streams.
 */
export function subscriptionEnvironment(
  config: ChaosConfig,
): Required<Pick<EnvironmentOptions, "profile" | "subscriptionFaults">> {
  return { profile: "upstash", subscriptionFaults: config.subscription };
}

function countBy(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

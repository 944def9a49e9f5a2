/**
 * The Durable Object watchdog in process, for chaos runs: one `LockWatchdog` per object name,
 * with SQLite storage from `node:sqlite`, its alarm as a timer that is sometimes delivered twice,
 * and its Redis client going through the run's faulty proxy (refusals, lost answers, spikes,
 * hangs). Holders reach the objects without faults on that hop (the stub calls `fetch` directly),
 * except that a crashed holder's messages never arrive.
 *
 * The harness times what the objects do itself: every renew request an object sends (when it was
 * sent and settled, and whether the script confirmed the hold) and every message from a holder.
 */
import { DatabaseSync } from "node:sqlite";
import { Redis } from "@upstash/redis";
import { createPrng } from "../../dev/rest/faults.js";
import { LockWatchdog } from "../../src/durable-object/lock-watchdog.js";
import { WATCHDOG_ROUTES } from "../../src/durable-object/messages.js";
import type {
  SqlLike,
  SqlValue,
  WatchdogNamespace,
  WatchdogStorage,
  WatchdogStub,
} from "../../src/durable-object/platform.js";
import { renewalIntervalMs } from "../../src/durable-object/schedule.js";
import { durableObjectWatchdog } from "../../src/durable-object/watchdog.js";
import { lockKeys } from "../../src/hold/script.js";
import { EXTEND } from "../../src/locks/exclusive/extend.js";
import { sleep as sleepMs } from "../../src/platform.js";
import { setKeyLocking } from "../../src/transport/call.js";
import type { RedisLike } from "../../src/transport/redis-like.js";
import { sentScript } from "../support/sent-script.js";
import type { ChaosConfig } from "./config.js";
import type { ChaosEnvironment } from "./environment.js";
import { type InvariantResult, seenLost, Tally } from "./invariants.js";
import type { HoldRecord, Journal } from "./journal.js";
import type { ArmingRequest } from "./killable-renewer.js";
import { copyArmingRequest, type LateCopies } from "./late-copies.js";
import type { ChaosHold, ChaosIsolate, ChaosPrimitive, HoldPlan } from "./primitive.js";
import { reentrantLockPrimitive } from "./primitives/lock.js";

/** `ctx.storage.sql` over an in-memory node:sqlite database (swapped by `deleteAll`). */
export class SqliteSql implements SqlLike {
  database = new DatabaseSync(":memory:");

  exec(query: string, ...bindings: SqlValue[]) {
    // The schema is several statements without bindings; everything else is one statement.
    if (bindings.length === 0 && query.trim().replace(/;\s*$/, "").includes(";")) {
      this.database.exec(query);
      return { toArray: () => [], rowsWritten: 0 };
    }
    const statement = this.database.prepare(query);
    if (/^\s*(INSERT|UPDATE|DELETE|REPLACE)/i.test(query)) {
      const { changes } = statement.run(...bindings);
      return { toArray: () => [], rowsWritten: Number(changes) };
    }
    const rows = statement.all(...bindings) as Record<string, unknown>[];
    return { toArray: () => rows, rowsWritten: 0 };
  }
}

/** A renew request an object sent: which hold it named (lock key, fencing token). */
export interface RenewRequest extends ArmingRequest {
  readonly lockKey: string;
  readonly fencingToken: number;
  /** A late copy of an earlier request (its answer went nowhere). */
  readonly copy?: boolean;
}

/** What the harness learns from the objects, by owner token. */
export interface WatchdogJournal {
  /** The renew requests the objects sent for an owner (and their late copies), oldest first. */
  readonly renewals: Map<string, RenewRequest[]>;
  /** When an object last heard from a holder of the owner (register or heartbeat). */
  readonly heardAt: Map<string, number>;
  /** Alarms delivered twice. */
  duplicateAlarms: number;
  /** Holder → object calls whose answer never came: not delivered, or delivered and withheld. */
  readonly hungCalls: { notDelivered: number; answerWithheld: number };
  /** When a holder → object call of an owner hung or failed: the object may not have heard it. */
  readonly callTroubles: Map<string, number[]>;
}

export interface InProcessWatchdogs {
  readonly namespace: WatchdogNamespace;
  readonly journal: WatchdogJournal;
  /** The holder of `owner` crashed: its messages (heartbeats, deregistration) never arrive. */
  crash(owner: string): void;
  close(): void;
}

export interface InProcessWatchdogOptions {
  /** The faulty proxy the objects' Redis client goes through, and its token. */
  readonly url: string;
  readonly token: string;
  readonly requestTimeoutMs: number;
  readonly seed: number;
  /** Fraction of alarms delivered a second time, at once (at-least-once delivery). */
  readonly duplicateAlarmRate: number;
  /**
   * Fraction of holder → object calls that never answer: half never reach the object, half
   * reach it and their answer is withheld (the holder's call must give up by its time budget).
   */
  readonly hangRate: number;
  /** The late-copy layer the objects' requests go through too. */
  readonly lateCopies?: LateCopies;
  /**
   * Whether the objects' server runs scripts under Upstash's per-key locking flag (its profile).
   * Production's object knows it from its `upstash.io` URL; the recording wrapper has no URL, so
   * without this its first script would ask the server, and renewals issued meanwhile would wait
   * for that answer unrecorded (a latency spike on it held a first renewal past its lease).
   */
  readonly scriptKeyLocking: boolean;
}

const OWNER_TOKEN = /\b[0-9a-f]{32}\b/;

/**
 * Holder → object calls that hang. Higher than the run's Redis hang rate: a short run makes only
 * some tens of these calls, and should meet a few.
 */
const OBJECT_CALL_HANG_RATE = 0.1;

export function startInProcessWatchdogs(options: InProcessWatchdogOptions): InProcessWatchdogs {
  const journal: WatchdogJournal = {
    renewals: new Map(),
    heardAt: new Map(),
    duplicateAlarms: 0,
    hungCalls: { notDelivered: 0, answerWithheld: 0 },
    callTroubles: new Map(),
  };
  const trouble = (owner: string | undefined) => {
    if (owner === undefined) return;
    const times = journal.callTroubles.get(owner) ?? [];
    times.push(Date.now());
    journal.callTroubles.set(owner, times);
  };
  const random = createPrng(options.seed ^ 0x00d0d0d0);
  const hangs = createPrng(options.seed ^ 0x0e0e0e0e);
  const never = () => new Promise<never>(() => {});
  const dead = new Set<string>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let closed = false;
  const later = (ms: number, run: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!closed) run();
    }, ms);
    timers.add(timer);
    return timer;
  };
  const redis = recordingRedis(
    new Redis({
      url: options.url,
      token: options.token,
      enableTelemetry: false,
      // As the object's own client (redisFromEnv): edgelock's transport owns re-sends; the
      // late copies the chaos delivers stand for the ones a client would make.
      retry: { retries: 0 },
      signal: () => AbortSignal.timeout(options.requestTimeoutMs),
    }),
    journal,
    options.lateCopies,
  );
  setKeyLocking(redis, options.scriptKeyLocking);

  class ChaosLockWatchdog extends LockWatchdog {
    protected override createRedis(): RedisLike {
      return redis;
    }
  }

  const objects = new Map<string, ChaosLockWatchdog>();
  const objectNamed = (name: string) => {
    let object = objects.get(name);
    if (object === undefined) {
      const sql = new SqliteSql();
      let alarm: { at: number; timer: ReturnType<typeof setTimeout> } | null = null;
      const deliver = (retryCount: number) => {
        alarm = null;
        const run = () =>
          object!.alarm({ retryCount, isRetry: retryCount > 0 }).catch(() => {
            // The runtime retries a throwing handler (the object re-arms itself too).
            if (retryCount < 6) later(100 * 2 ** retryCount, () => deliver(retryCount + 1));
          });
        void run();
        if (random() < options.duplicateAlarmRate) {
          journal.duplicateAlarms += 1;
          void object!.alarm({ retryCount, isRetry: true }).catch(() => {});
        }
      };
      const storage: WatchdogStorage = {
        sql,
        getAlarm: async () => alarm?.at ?? null,
        async setAlarm(at) {
          if (alarm) clearTimeout(alarm.timer);
          alarm = { at, timer: later(Math.max(0, at - Date.now()), () => deliver(0)) };
        },
        async deleteAlarm() {
          if (alarm) clearTimeout(alarm.timer);
          alarm = null;
        },
        async deleteAll() {
          sql.database.close();
          sql.database = new DatabaseSync(":memory:");
        },
      };
      object = new ChaosLockWatchdog({ storage }, {});
      objects.set(name, object);
    }
    return object;
  };

  const stub = (name: string): WatchdogStub => ({
    async fetch(input, init) {
      const owner = init.body?.match(OWNER_TOKEN)?.[0];
      // A crashed holder's isolate is gone: nothing it would send arrives.
      if (owner !== undefined && dead.has(owner)) throw new TypeError("fetch failed");
      // Two draws per call whatever the rate, so a seed replays the same hangs.
      const hung = hangs() < options.hangRate;
      const delivered = hangs() < 0.5;
      if (hung && !delivered) {
        journal.hungCalls.notDelivered += 1;
        trouble(owner);
        return never();
      }
      const response = await objectNamed(name)
        .fetch(new Request(input, init))
        .catch((error: unknown) => {
          trouble(owner);
          throw error;
        });
      const route = new URL(input).pathname;
      if (
        owner !== undefined &&
        (route === WATCHDOG_ROUTES.register || route === WATCHDOG_ROUTES.heartbeat)
      ) {
        journal.heardAt.set(owner, Date.now());
      }
      if (hung) {
        journal.hungCalls.answerWithheld += 1;
        trouble(owner);
        return never();
      }
      return response;
    },
  });

  return {
    namespace: { idFromName: (name) => name, get: (id) => stub(id as string) },
    journal,
    crash: (owner) => dead.add(owner),
    close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
    },
  };
}

/**
 * The objects' Redis: records each renew request (the reentrant lock's extend script), and hands
 * every request to the late-copy layer (a copy of a renewal counts as one more renew request of
 * its hold, sent when the original was, never confirming).
 */
function recordingRedis(
  redis: Redis,
  journal: WatchdogJournal,
  lateCopies: LateCopies | undefined,
): RedisLike {
  const isExtendPromise = sentScript(EXTEND);
  const record = async (
    sha: string | null,
    source: string | null,
    keys: string[],
    args: string[],
    send: () => Promise<unknown>,
  ) => {
    const isRenew = (await isExtendPromise)(source, sha);
    let settled = false;
    if (!isRenew) {
      lateCopies?.maybeCopy({ originalSettled: () => settled, send });
      return send().finally(() => {
        settled = true;
      });
    }
    const [owner = "", leaseMs = "0", , , fencingToken = "0"] = args;
    const request: RenewRequest = {
      sentAt: Date.now(),
      settledAt: undefined,
      leaseMs: Number(leaseMs),
      confirmed: false,
      lockKey: keys[0] ?? "",
      fencingToken: Number(fencingToken),
    };
    const requests = journal.renewals.get(owner) ?? [];
    requests.push(request);
    journal.renewals.set(owner, requests);
    const copy = copyArmingRequest(lateCopies, request, send);
    if (copy) requests.push(copy);
    try {
      const reply = await send();
      request.confirmed = Array.isArray(reply) && reply[0] === 1;
      return reply;
    } finally {
      request.settledAt = Date.now();
    }
  };
  return {
    eval: (script, keys, args) =>
      record(null, script, keys, args, () => redis.eval(script, keys, args)),
    evalsha: (sha, keys, args) =>
      record(sha, null, keys, args, () => redis.evalsha(sha, keys, args)),
  };
}

/**
 * The reentrant lock whose watchdog-mode holds are renewed by the Durable Object watchdog (the
 * objects in process, above). Heartbeats are required (three leases), so that a crashed holder's
 * object stops renewing; lease-mode holds are the plain lock's.
 */
export function durableObjectLockPrimitive(
  env: ChaosEnvironment,
  config: ChaosConfig,
): ChaosPrimitive {
  const database = env.databases[0]!;
  const watchdogs = startInProcessWatchdogs({
    url: database.proxy.url,
    token: database.server.token,
    requestTimeoutMs: config.requestTimeoutMs,
    seed: config.seed,
    duplicateAlarmRate: 0.1,
    hangRate: OBJECT_CALL_HANG_RATE,
    lateCopies: env.lateCopies,
    scriptKeyLocking: database.server.profile === "upstash",
  });
  const heartbeatTimeoutMs = 3 * config.watchdogTimeoutMs;
  const { journal } = watchdogs;
  const requestsOf = (
    owner: string,
    hold: { readonly name?: string; readonly fencingToken?: number | undefined } = {},
  ): RenewRequest[] =>
    (journal.renewals.get(owner) ?? []).filter(
      (request) =>
        (hold.name === undefined || request.lockKey === lockKeys(env.prefix, hold.name).lock) &&
        (hold.fencingToken === undefined || request.fencingToken === hold.fencingToken),
    );
  const base = reentrantLockPrimitive(env.prefix, env.observer);
  const elsewhere = reentriesElsewhere(base, config);
  return {
    ...base,
    acquire: elsewhere.acquire,
    checks: (run, harness) => [
      checkNoHoldDropped(run, requestsOf, journal, {
        leaseMs: config.watchdogTimeoutMs,
        lateness: harness.lateness,
      }),
    ],
    name: "lock (Durable Object watchdog)",
    renewal: () => ({
      inner: durableObjectWatchdog(watchdogs.namespace, {
        heartbeatTimeoutMs,
        prefix: env.prefix,
        requestTimeoutMs: config.requestTimeoutMs,
      }),
      remote: { requestsOf, crash: (owner) => watchdogs.crash(owner) },
    }),
    // The holder hears of a loss at its next heartbeat (every third of the timeout); the object
    // decides it once a failing renewal settles, which may hang up to its client's timeout on
    // each of its tries (3).
    lossReportSlackMs: heartbeatTimeoutMs / 3 + 3 * config.requestTimeoutMs,
    // A crashed holder's object renews until it has heard nothing for heartbeatTimeoutMs; the
    // lock ends one lease after the last renewal sent before then.
    copyBound(owner, leaseMs) {
      const heardAt = journal.heardAt.get(owner);
      if (heardAt === undefined) return Number.NEGATIVE_INFINITY;
      let bound = Number.NEGATIVE_INFINITY;
      for (const request of requestsOf(owner)) {
        if (request.sentAt > heardAt + heartbeatTimeoutMs) continue;
        bound = Math.max(bound, (request.settledAt ?? Number.POSITIVE_INFINITY) + leaseMs);
      }
      return bound;
    },
    figures() {
      const renewals = [...journal.renewals.values()].flat().filter((each) => !each.copy);
      return {
        "renew requests sent by the objects": renewals.length,
        "  confirmed (the script re-armed the lease)": renewals.filter((each) => each.confirmed)
          .length,
        "alarms delivered twice": journal.duplicateAlarms,
        // One figure (each figure is a case a short run must meet): both kinds together.
        "holder → object calls hung (not delivered, or answer withheld)":
          journal.hungCalls.notDelivered + journal.hungCalls.answerWithheld,
        ...(config.reentryElsewhereRate > 0
          ? { "re-entries made through another isolate's client (same owner)": elsewhere.count() }
          : {}),
      };
    },
    close: () => watchdogs.close(),
  };
}

/** How long, in leases, the first holder holds on after the other invocation's re-entry ended. */
const HOLD_ON_AFTER_LEASES = 3;

/** A hold's fields and methods as a plain object (a ChaosHold may be a class with getters). */
function copyOf(hold: ChaosHold): ChaosHold {
  return {
    owner: hold.owner,
    fencingToken: hold.fencingToken,
    signal: hold.signal,
    shared: hold.shared ?? false,
    validUntil: () => hold.validUntil(),
    lastArmedSettledAt: (sentBefore) => hold.lastArmedSettledAt(sentBefore),
    confirmedDeadline: () => hold.confirmedDeadline(),
    ...(hold.extend === undefined ? {} : { extend: (ms: number) => hold.extend!(ms) }),
    ...(hold.reenter === undefined
      ? {}
      : { reenter: (mode?: HoldPlan["mode"]) => hold.reenter!(mode) }),
    release: () => hold.release(),
    crash: () => hold.crash(),
  };
}

/**
 * The kind's acquire, whose watchdog-mode holds re-enter now and then (`reentryElsewhereRate`)
 * through another isolate's client, as lease-vs-watchdog.md allows ("re-entrant handles of one
 * hold share its token and its registration", across invocations with `owner`): that
 * isolate tracks the owner (its requests are timed; a crash of the section kills the owner there
 * too, its heartbeats with it).
 */
function reentriesElsewhere(
  base: ChaosPrimitive,
  config: ChaosConfig,
): { acquire: ChaosPrimitive["acquire"]; count(): number } {
  const isolates = new Map<number, ChaosIsolate>();
  const random = createPrng(config.seed ^ 0x0c0551);
  let count = 0;
  const wrap = (hold: ChaosHold, isolate: ChaosIsolate, key: string, plan: HoldPlan): ChaosHold => {
    const reenteredOn = new Set<ChaosIsolate>();
    const reenter = hold.reenter;
    return {
      ...copyOf(hold),
      crash() {
        hold.crash();
        for (const other of reenteredOn) other.crash(hold.owner);
      },
      ...(reenter === undefined
        ? {}
        : {
            async reenter(mode?: HoldPlan["mode"]) {
              const others = [...isolates.values()].filter((other) => other !== isolate);
              const other = others[Math.floor(random() * others.length)];
              // Both through the object: the first hold and the other invocation's re-entry.
              if (
                other === undefined ||
                plan.mode !== "watchdog" ||
                random() >= config.reentryElsewhereRate
              ) {
                return reenter.call(hold, mode);
              }
              count += 1;
              other.track(hold.owner);
              reenteredOn.add(other);
              const { signal: _, ...outer } = plan;
              const inner = await base.acquire(other, key, {
                ...outer,
                mode: "watchdog",
                waitMs: 0,
                tryOnly: false,
              });
              if (inner === null) throw new Error("chaos: a re-entry came back empty");
              // The other invocation's task is short: it releases its re-entry soon, while this
              // one holds on for a few leases (renewed by the object, as its handle is held).
              await sleepMs(random() * config.watchdogTimeoutMs * 0.5);
              const released = await inner.release().then(
                () => true,
                () => false,
              );
              await sleepMs(HOLD_ON_AFTER_LEASES * config.watchdogTimeoutMs);
              // Its handle was the other invocation's: nothing left to extend or release here.
              const { extend: _extend, ...done } = copyOf(inner);
              return released ? { ...done, release: async () => {} } : done;
            },
          }),
    };
  };
  return {
    async acquire(isolate, key, plan) {
      isolates.set(isolate.id, isolate);
      const hold = await base.acquire(isolate, key, plan);
      return hold === null ? null : wrap(hold, isolate, key, plan);
    },
    count: () => count,
  };
}

/**
 * The watchdog drops no hold while its holder holds it: a watchdog-mode hold whose signal aborted
 * during its section had a cause the docs name — a renewal of that hold (its owner and token)
 * that failed, hung past the abort or found the hold gone; a call of its owner to the object that
 * hung or failed (the object may have stopped hearing it); or a force release of its key that
 * may have met it; or the objects' alarms, timers of this process, held back past the loss by
 * the process's own stalls. Otherwise the object stopped renewing a hold that was still held:
 * something done for another handle (a re-entry's deregistration) landed on it.
 */
export function checkNoHoldDropped(
  run: Journal,
  requestsOf: (owner: string, hold: { name?: string; fencingToken?: number }) => RenewRequest[],
  journal: WatchdogJournal,
  timing: ObjectTiming,
): InvariantResult {
  const tally = new Tally("the Durable Object watchdog drops no hold its holder still holds");
  const lostAtOf = seenLost(run.holds, run.samples);
  for (const hold of run.holds) {
    if (hold.mode !== "watchdog" || hold.token === undefined || hold.keys.length !== 1) continue;
    // Told (its signal), or seen lost by the observer while its holder still held it.
    const abortedAt = Math.min(hold.abortedAt(), lostAtOf.get(hold) ?? Number.POSITIVE_INFINITY);
    const key = hold.keys[0]!;
    tally.check(
      abortedAt >= hold.end || causeOfLoss(run, hold, key, abortedAt, requestsOf, journal, timing),
      () =>
        `key ${key}: ${hold.owner.slice(0, 8)}'s hold (token ${hold.token}) lost at ${abortedAt}, ` +
        `section ${hold.start}–${hold.end}, with every renewal of it confirmed, no call to its object ` +
        `failed and no force release: renewals ${
          requestsOf(hold.owner, { name: key, fencingToken: hold.token! })
            .filter((request) => request.copy !== true)
            .map(
              (request) =>
                `${request.sentAt}–${request.settledAt} ${request.confirmed ? "ok" : "not confirmed"}`,
            )
            .join(", ") || "none"
        }`,
    );
  }
  return tally.result();
}

/** The objects' lease, and the harness process's timer lateness over an interval (LoopLag). */
interface ObjectTiming {
  readonly leaseMs: number;
  lateness(from: number, to: number): number;
}

function causeOfLoss(
  run: Journal,
  hold: HoldRecord,
  key: string,
  abortedAt: number,
  requestsOf: (owner: string, hold: { name?: string; fencingToken?: number }) => RenewRequest[],
  journal: WatchdogJournal,
  timing: ObjectTiming,
): boolean {
  const renewals = requestsOf(hold.owner, { name: key, fencingToken: hold.token! }).filter(
    (request) => request.copy !== true && request.sentAt <= abortedAt,
  );
  // The next renewal was due an interval after the last confirmed one (the first, an interval
  // after the lease was set, which is before the section began). The objects' alarms are timers
  // of this process: a stall of its event loop holds one back exactly as long.
  const lastRenewedAt = Math.max(
    hold.start,
    ...renewals.filter((request) => request.confirmed).map((request) => request.sentAt),
  );
  const renewalDueAt = lastRenewedAt + renewalIntervalMs(timing.leaseMs);
  const alarmHeldBack = renewalDueAt + timing.lateness(lastRenewedAt, abortedAt) >= abortedAt;
  const renewalFailed = renewals.some(
    (request) =>
      request.settledAt === undefined || request.settledAt > abortedAt || !request.confirmed,
  );
  const callFailed = (journal.callTroubles.get(hold.owner) ?? []).some((at) => at <= abortedAt);
  const forced = run.forceReleases.some(
    (release) =>
      release.keys.includes(key) && release.sentAt <= abortedAt && release.settledAt >= hold.start,
  );
  // Its answer came after its first lease: Redis may have given the lock away meanwhile, so the
  // client takes it as lost on arrival, whatever the object does next.
  const lostOnArrival = abortedAt <= hold.start && hold.validAtStart <= hold.start;
  return renewalFailed || callFailed || forced || lostOnArrival || alarmHeldBack;
}

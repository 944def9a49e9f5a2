/**
 * The stage of a chaos run: one or more databases (a RedLock needs several), each a faulty local
 * REST server behind a proxy that hangs some requests, and a second fault-free REST server on the
 * same Redis (the observer, which checks state without being lied to); and the isolates.
 */
import { createHash } from "node:crypto";
import { Redis } from "@upstash/redis";
import {
  type DevServer,
  type ServerProfile,
  ServerStats,
  startDevServer,
} from "../../dev/index.js";
import { FaultController } from "../../dev/rest/faults.js";
import { startRestServer } from "../../dev/rest/server.js";
import { LockClient, type RedisLike, type Renewer } from "../../src/index.js";
import { SCRIPTS } from "../../src/scripts.js";
import type { ChaosBackend, ChaosConfig } from "./config.js";
import { type HangCounts, type HangProxy, startHangProxy } from "./hang-proxy.js";
import { type ArmingRequest, KillableRenewer, type RemoteRenewals } from "./killable-renewer.js";
import { copyArmingRequest, LateCopies, type LateCopyOptions } from "./late-copies.js";
import type { ChaosIsolate } from "./primitive.js";
import {
  type IsolateSubscriptions,
  type SubscriptionFaultOptions,
  SubscriptionFaults,
} from "./subscription-faults.js";
import { traceWaits } from "./wait-trace.js";

/** The fault-free side channel to one database: its own REST server on the same Redis. */
export interface Observer {
  readonly redis: Redis;
  /** Raw replies (no JSON parsing of strings such as owner tokens), for state snapshots. */
  readonly raw: Redis;
  /** A LockClient with the run's prefix, for read-only questions. */
  readonly client: LockClient;
}

/** One database: the faulty server the isolates use (through the hang proxy), and its observer. */
export interface ChaosDatabase {
  readonly server: DevServer;
  readonly proxy: HangProxy;
  readonly observer: Observer;
}

export interface ChaosEnvironment {
  /** The first database's faulty server (the one every kind but RedLock uses). */
  readonly server: DevServer;
  /** The first database's observer. */
  readonly observer: Observer;
  readonly databases: readonly ChaosDatabase[];
  /** Key prefix of this run's locks; the resource keys live under `<prefix>-store`. */
  readonly prefix: string;
  /** Hangs injected by the proxies, summed over databases. */
  hangs(): HangCounts;
  /** Blocking pops (push-mode parks) the isolates' lock clients sent, counted as they settle. */
  readonly parks: ParkCounts;
  /** The client layer that delivers copies of the isolates' requests late. */
  readonly lateCopies: LateCopies;
  /**
   * The faults on the isolates' hand-off streams, where they subscribe (the `*-sub` kinds): the
   * isolates' Redis clients offer `subscribe` only then.
   */
  readonly subscriptions: SubscriptionFaults | undefined;
  close(): Promise<void>;
}

/** Parks of push-mode waiters, as their lock clients saw them. */
export interface ParkCounts {
  /** Blocking pops that settled (answered, failed or given up on). */
  settled: number;
  /** Those answered with a grant: the waiter woke holding the lock. */
  woken: number;
}

export interface EnvironmentOptions {
  readonly backend: ChaosBackend;
  readonly seed: number;
  /** Half refused before running, half executed and then answered into the void. */
  readonly faultRate: number;
  /** Fraction of requests that hang until the client gives up. */
  readonly hangRate: number;
  /** A hung request is dropped after this long at the latest. */
  readonly maxHangMs: number;
  /** Independent databases (REST server + Redis each). Default 1. */
  readonly databases?: number;
  /** Late copies of the isolates' requests. Default: none. */
  readonly lateCopies?: LateCopyOptions;
  /** The faulty servers' profile. Default `redis` (blocking pops block there). */
  readonly profile?: ServerProfile;
  /**
   * The isolates subscribe (push hand-off over a subscription), with these faults on their
   * streams. Default: their Redis clients cannot subscribe.
   */
  readonly subscriptionFaults?: SubscriptionFaultOptions;
}

async function startDatabase(
  options: EnvironmentOptions,
  index: number,
  prefix: string,
  closers: (() => Promise<void>)[],
): Promise<ChaosDatabase> {
  const seed = (options.seed + index * 7_919) | 0;
  const server = await startDevServer({
    backend: options.backend,
    // The push kinds park on blocking pops, which only a Redis behind a REST proxy serves; the
    // subscription kinds run on Upstash's (scripts under per-key locking, pops that never block).
    profile: options.profile ?? "redis",
    faults: {
      failBeforeExecute: options.faultRate / 2,
      dropAfterExecute: options.faultRate / 2,
      seed,
    },
  });
  closers.push(() => server.close());
  const observerServer = await startRestServer({
    backend: server.backend,
    token: server.token,
    faults: new FaultController(),
    stats: new ServerStats(),
    host: "127.0.0.1",
    port: 0,
  });
  closers.push(() => observerServer.close());
  const serverEndRate = options.subscriptionFaults?.serverEndRate ?? 0;
  const proxy = await startHangProxy({
    target: server.url,
    hangRate: options.hangRate,
    seed,
    maxHangMs: options.maxHangMs,
    ...(serverEndRate > 0
      ? {
          endStreams: {
            rate: serverEndRate,
            withinMs: options.subscriptionFaults!.endWithinMs,
          },
        }
      : {}),
  });
  closers.push(() => proxy.close());
  const redis = new Redis({ url: observerServer.url, token: server.token, enableTelemetry: false });
  const raw = new Redis({
    url: observerServer.url,
    token: server.token,
    enableTelemetry: false,
    automaticDeserialization: false,
  });
  return { server, proxy, observer: { redis, raw, client: new LockClient({ redis, prefix }) } };
}

export async function startEnvironment(options: EnvironmentOptions): Promise<ChaosEnvironment> {
  const prefix = `chaos${Date.now().toString(36)}${options.seed.toString(36)}`;
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const closeOne of closers.reverse()) await closeOne().catch(() => {});
  };
  const databases: ChaosDatabase[] = [];
  try {
    for (let index = 0; index < (options.databases ?? 1); index++) {
      databases.push(await startDatabase(options, index, prefix, closers));
    }
  } catch (error) {
    await close();
    throw error;
  }
  const first = databases[0]!;
  const lateCopies = new LateCopies(
    options.lateCopies ?? { rate: 0, minDelayMs: 0, maxDelayMs: 0 },
    options.seed,
  );
  const subscriptions =
    options.subscriptionFaults === undefined
      ? undefined
      : new SubscriptionFaults(options.subscriptionFaults, options.seed);
  for (const { proxy } of databases) {
    proxy.onStreamEnded((path) => subscriptions?.endedByServer(path));
  }
  return {
    server: first.server,
    observer: first.observer,
    databases,
    prefix,
    parks: { settled: 0, woken: 0 },
    lateCopies,
    subscriptions,
    hangs() {
      const sum = { requests: 0, hungBeforeExecute: 0, hungAfterExecute: 0 };
      for (const { proxy } of databases) {
        const counts = proxy.counts();
        sum.requests += counts.requests;
        sum.hungBeforeExecute += counts.hungBeforeExecute;
        sum.hungAfterExecute += counts.hungAfterExecute;
      }
      return sum;
    },
    async close() {
      await lateCopies.stop();
      subscriptions?.closeAll();
      await close();
    },
  };
}

/** One simulated isolate: a Redis client and LockClient per database, and one renewer. */
export function createIsolate(
  env: ChaosEnvironment,
  id: number,
  options: Pick<ChaosConfig, "watchdogTimeoutMs" | "wait" | "requestTimeoutMs">,
  renewal?: { readonly inner: Renewer; readonly remote?: RemoteRenewals },
): ChaosIsolate {
  const renewer = new KillableRenewer(renewal?.inner, renewal?.remote);
  const crashed = new Set<string>();
  const crashedAt = new Map<string, number>();
  const requests: OwnerRequests = new Map();
  const killWhenParked = new Map<string, (at: number) => void>();
  const crash = (owner: string) => {
    crashed.add(owner);
    if (!crashedAt.has(owner)) crashedAt.set(owner, Date.now());
    renewer.kill(owner);
  };
  const hooks: TransportHooks = {
    counts: env.parks,
    subscriptions:
      env.subscriptions === undefined
        ? undefined
        : { faults: env.subscriptions, streams: env.subscriptions.forIsolate(id, crashed) },
    crashed,
    requests,
    lateCopies: env.lateCopies,
    operationOwners: new Map(),
    parked(owner) {
      const killed = killWhenParked.get(owner);
      if (killed === undefined) return;
      killWhenParked.delete(owner);
      crash(owner);
      killed(Date.now());
    },
  };
  // The polling kinds poll (push is the library's default; the push kinds pass their own
  // `wait` with each acquire): on their own they would park with the default 5 s parkMs, beyond
  // the run's request timeout.
  const clientOn = (redis: Redis) =>
    traceWaits(
      new LockClient({
        redis: isolateTransport(redis, hooks),
        prefix: env.prefix,
        watchdogTimeoutMs: options.watchdogTimeoutMs,
        wait: { mode: "poll", ...options.wait, maxPolls: 10_000 },
        watchdog: renewer,
      }),
    );
  const connections = env.databases.map(({ proxy, server }) => {
    // The client gives up on a request (a hang) after requestTimeoutMs.
    const redis = new Redis({
      url: proxy.url,
      token: server.token,
      enableTelemetry: false,
      signal: () => AbortSignal.timeout(options.requestTimeoutMs),
    });
    return { redis, client: clientOn(redis) };
  });
  const first = connections[0]!;
  return {
    id,
    redis: first.redis,
    client: first.client,
    clients: connections.map((each) => each.client),
    spawnClient: () => clientOn(first.redis),
    renewer,
    crash,
    killWhenParked(owner, killed) {
      killWhenParked.set(owner, killed);
      return () => killWhenParked.delete(owner);
    },
    track(owner) {
      if (!requests.has(owner)) requests.set(owner, []);
    },
    crashedAt: (owner) => crashedAt.get(owner),
    requestsOf(owner) {
      return requests.get(owner) ?? [];
    },
  };
}

/** The scripts an isolate sent that name a tracked owner (any request may re-arm its lease). */
type OwnerRequests = Map<string, ArmingRequest[]>;

/** What an isolate's transport reports to, and consults. */
export interface TransportHooks {
  readonly counts: ParkCounts;
  /** Owners whose process crashed: nothing naming them leaves any more. */
  readonly crashed: ReadonlySet<string>;
  readonly requests: OwnerRequests;
  readonly lateCopies: LateCopies;
  /** Operation ids (24 hex digits) seen in a tracked owner's scripts → that owner. */
  readonly operationOwners: Map<string, string>;
  /**
   * A blocking pop (a park) of `owner`'s acquisition is leaving, or (subscribing) the answer to
   * one of its attempts sent listening came back: it is parked.
   */
  parked(owner: string): void;
  /** The tampering of this isolate's hand-off streams, where it subscribes. */
  readonly subscriptions:
    | { readonly faults: SubscriptionFaults; readonly streams: IsolateSubscriptions }
    | undefined;
}

/**
 * The owner a script argument names: the owner itself, or a semaphore's hold `<owner> <fencing
 * token>` (semaphore.extend and semaphore.release name the hold only: a crashed holder's renewal
 * or release of its permits must not leave its process either, and they re-arm its lease).
 */
function ownerNamedBy(arg: unknown): string | undefined {
  if (typeof arg !== "string") return undefined;
  const hold = SEMAPHORE_HOLD.exec(arg);
  return hold === null ? arg : hold[1];
}

const SEMAPHORE_HOLD = /^(\S+) \d+$/;

/** The texts and SHA-1s of the scripts by which a waiter leaves its wait. */
const LEAVE_SCRIPTS: ReadonlySet<string> = new Set(
  ["queue.leave", "semaphore.abandon", "readWriteLock.abandonRead"].flatMap((name) => {
    const script = SCRIPTS.get(name);
    if (script === undefined) throw new Error(`chaos: no script ${name} in the catalogue`);
    return [script.source, script.keyLocking.source].flatMap((source) => [
      source,
      createHash("sha1").update(source, "utf8").digest("hex"),
    ]);
  }),
);

/** Operation ids as `newOperationId()` makes them. */
const OPERATION_ID = /^[0-9a-f]{24}$/;

/**
 * `redis` for a LockClient: counts its blocking pops, times every script that names a tracked
 * owner (in `requests`), sends none that names an owner in `crashed` (a crashed process's timers
 * — a claim, a renewal — die with it, so nothing it would still send reaches Redis), and hands
 * every request that leaves to the late-copy layer, which may deliver it again later (a copy of
 * a tracked owner's script counts as one more of its requests, sent when the original was).
 * Where the isolates subscribe, `subscribe` is the Redis client's with the run's faults on the
 * stream (subscription-faults.ts), and an attempt sent listening counts as a park.
 */
export function isolateTransport(redis: Redis, hooks: TransportHooks): RedisLike {
  const { counts, crashed, requests, lateCopies, operationOwners, subscriptions } = hooks;
  const timed = async <T>(
    scriptOrSha: string,
    keys: readonly string[],
    args: readonly unknown[],
    send: () => Promise<T>,
  ): Promise<T> => {
    const owners = args.flatMap((arg) => {
      const owner = ownerNamedBy(arg);
      return owner !== undefined && requests.has(owner) ? [owner] : [];
    });
    if (owners.some((owner) => crashed.has(owner))) {
      throw new Error("chaos: the owner's process crashed, this request never left it");
    }
    if (owners.length > 0) {
      for (const arg of args) {
        if (typeof arg === "string" && OPERATION_ID.test(arg)) operationOwners.set(arg, owners[0]!);
      }
    }
    const request: ArmingRequest = {
      sentAt: Date.now(),
      settledAt: undefined,
      leaseMs: 0,
      confirmed: false,
    };
    if (LEAVE_SCRIPTS.has(scriptOrSha)) request.leave = true;
    for (const owner of owners) requests.get(owner)!.push(request);
    const copy = copyArmingRequest(lateCopies, request, send);
    if (copy) for (const owner of owners) requests.get(owner)!.push(copy);
    const listening = subscriptions?.faults.attemptSent(args, keys, subscriptions.streams);
    const shown = (value: unknown) =>
      typeof value === "string" && value.length > 30 ? `${value.slice(0, 8)}…` : String(value);
    const what = `${keys.map((key) => key.slice(key.lastIndexOf("}") + 1) || "lock").join(",")} [${args.map(shown).join(" ")}]`;
    try {
      const reply = await send();
      request.trace = `${what} → ${JSON.stringify(reply)?.slice(0, 80)}`;
      return reply;
    } catch (error) {
      request.failed = true;
      request.trace = `${what} → ${error instanceof Error ? error.name : "error"}`;
      throw error;
    } finally {
      request.settledAt = Date.now();
      // Answered, the attempt registered its waiter if the lock was busy: it listens now.
      if (listening !== undefined) hooks.parked(listening.owner);
    }
  };
  return {
    eval: (script, keys, args) => timed(script, keys, args, () => redis.eval(script, keys, args)),
    evalsha: (sha, keys, args) => timed(sha, keys, args, () => redis.evalsha(sha, keys, args)),
    ...(subscriptions === undefined
      ? {}
      : { subscribe: (channel: string) => subscriptions.streams.subscribe(redis, channel) }),
    async exec(command) {
      const parking = command[0] === "BLPOP";
      let settled = false;
      const sentAt = Date.now();
      let owner: string | undefined;
      if (parking) {
        const key = String(command[1]);
        owner = operationOwners.get(key.slice(key.lastIndexOf(":") + 1));
        if (owner !== undefined) hooks.parked(owner);
        lateCopies.maybeCopy({
          park: true,
          originalSettled: () => settled,
          send: () => redis.exec(command),
        });
      }
      try {
        const reply = await redis.exec(command);
        if (parking && reply !== null) counts.woken += 1;
        return reply;
      } catch (error) {
        // A pop that hung or failed may have taken the word of a hand-off with it (its grant
        // then lapses unclaimed): the waiter's request failed, as an attempt's may.
        if (owner !== undefined && requests.has(owner)) {
          requests.get(owner)!.push({
            sentAt,
            settledAt: Date.now(),
            leaseMs: 0,
            confirmed: false,
            failed: true,
            park: true,
            trace: `BLPOP → ${error instanceof Error ? error.name : "error"}`,
          });
        }
        throw error;
      } finally {
        settled = true;
        if (parking) counts.settled += 1;
      }
    },
  };
}

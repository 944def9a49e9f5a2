/**
 * The chaos adapters of the kinds whose handles are LockHandles: the reentrant lock
 * (`client.lock`), the fair lock (`client.fairLock`) and the read-write lock (`readWriteLock`:
 * a section asks for a read hold with probability `sharedRate`, else for the write lock). They
 * also run with push hand-off (`wait.mode: "push"`, given as `wait`): woken by a blocking pop,
 * or over a subscription (`wakeBy: "subscription"`).
 */

import { fairLockKeys, lockKeys, readWriteLockKeys } from "../../../src/hold/script.js";
import type { LockClient, WaitOptions } from "../../../src/index.js";
import type { ChaosConfig } from "../config.js";
import type { ChaosEnvironment, Observer } from "../environment.js";
import type { ChaosIsolate, ChaosPrimitive, ForceReleaseTarget } from "../primitive.js";
import { type KeyLayout, readKeys } from "../server-state.js";
import { acquireHold, type HeldHandle, type Opener, type OpenerFactory } from "./hold.js";

export type { Observer };

/** A primitive over one database whose holds are LockHandles; push mode when `push` is given. */
function lockFamily(
  name: string,
  observer: Observer,
  open: OpenerFactory,
  layout: (key: string) => KeyLayout,
  isHeldBy: (client: LockClient, key: string, owner: string) => Promise<boolean>,
  forceRelease: ForceRelease,
  { sharedRate = 0, push }: { sharedRate?: number; push?: PushWaiting | undefined } = {},
): ChaosPrimitive {
  const opener: OpenerFactory = push
    ? (isolate, key, plan) => waitingWith(open(isolate, key, plan), push)
    : open;
  return {
    name: push ? `${name} (${push.label})` : name,
    capacity: 1,
    sharedRate,
    ...(push ? { figures: push.figures, parks: true } : {}),
    ...(push?.killParkedRate === undefined ? {} : { killParkedRate: push.killParkedRate }),
    acquire: (isolate, key, plan) => acquireHold(opener, isolate, key, plan),
    forceRelease(isolate, key, random, heldAs) {
      const { holds, run } = forceRelease(isolate, key, random, heldAs);
      return { target: { keys: [key], holds }, done: run() };
    },
    isHeldBy: (key, owner) => isHeldBy(observer.client, key, owner),
    async holders(key) {
      const state = (await readKeys(observer.raw, [layout(key)])).get(key)!;
      return [...state.holders.keys()];
    },
    state: (keys) => readKeys(observer.raw, keys.map(layout)),
  };
}

/**
 * An administrator's force release of a workload key: what it ends, and the call. It goes through
 * the isolate's client, so the faults reach it too (it is exactly-once by its operation id).
 */
type ForceRelease = (
  isolate: ChaosIsolate,
  key: string,
  random: () => number,
  heldAs: "exclusive" | "shared" | undefined,
) => { holds: ForceReleaseTarget["holds"]; run: () => Promise<boolean> };

/**
 * A lock's (or a semaphore's) acquisitions with `wait` (push mode) over the client's polling
 * policy; every hold one returns is told to `acquired`.
 */
export function waitingWith(lock: Opener, { wait, acquired }: PushWaiting): Opener {
  const seen = <H extends HeldHandle | null>(handle: H): H => {
    if (handle !== null) acquired?.(handle);
    return handle;
  };
  return {
    acquire: async (options) => seen(await lock.acquire({ ...options, wait })),
    tryAcquire: async (options) => seen(await lock.tryAcquire({ ...options, wait })),
  };
}

/** Push mode: the run's park and claim windows; its parks and wake-ups among the figures. */
export function pushWaiting(env: ChaosEnvironment, config: ChaosConfig): PushWaiting {
  return {
    label: "push",
    wait: { mode: "push", ...config.push },
    figures: () => ({
      "parks (blocking pops settled)": env.parks.settled,
      "  woken holding the lock (hand-offs)": env.parks.woken,
    }),
  };
}

/**
 * Push mode woken over a subscription to the lock's (or semaphore's) hand-off channels (the
 * `upstash` profile, where pops never block): the run's park and claim windows; its streams, the faults on them and
 * what came of the hand-offs among the figures (subscription-faults.ts). Every figure must be
 * met by the short run (test/node/chaos).
 */
export function subscriptionWaiting(env: ChaosEnvironment, config: ChaosConfig): PushWaiting {
  const faults = env.subscriptions;
  if (faults === undefined) throw new Error("a subscription kind needs subscriptionFaults");
  const { counts } = faults;
  return {
    label: "push, subscription",
    wait: { mode: "push", wakeBy: "subscription", ...config.push },
    killParkedRate: config.subscription.killRate,
    acquired: (handle) => faults.acquired(handle.owner, handle.fencingToken),
    figures: () => ({
      "streams opened (subscriptions)": counts.streams,
      "  confirmed": counts.confirmed,
      "  confirmation withheld (never confirmed)": counts.neverConfirmed,
      "  ended mid-way silently (no event)": counts.endedSilently,
      "  ended mid-way with an error event": counts.endedWithError,
      ...(config.subscription.serverEndRate > 0
        ? { "  ended by the server (the proxy ended the body)": counts.endedByServer }
        : {}),
      "attempts sent listening": counts.listening,
      "  on a stream that had ended silently": counts.listeningOnSilentStream,
      "hand-off words pushed to the isolates": counts.words,
      "  grants (the rest: behind)": counts.grants,
      "  lost": counts.lost,
      "  late": counts.late,
      "    grants late past their claim window": counts.lateBeyondClaim,
      "  for a killed subscriber (never read)": counts.toKilled,
      "hand-offs held after their word was heard": counts.heldByWord,
      "hand-offs held after their word was lost or too late (replayed)": counts.heldAfterLostWord,
    }),
  };
}

export interface PushWaiting {
  /** In the primitive's name: `lock (<label>)`. */
  readonly label: string;
  readonly wait: WaitOptions;
  /** Overrides the run's `killParkedRate`. */
  readonly killParkedRate?: number;
  /** Told of every hold an acquisition returned. */
  readonly acquired?: (handle: HeldHandle) => void;
  figures(): Readonly<Record<string, number>>;
}

export function reentrantLockPrimitive(
  prefix: string,
  observer: Observer,
  push?: PushWaiting,
): ChaosPrimitive {
  return lockFamily(
    "lock",
    observer,
    (isolate, key) => isolate.client.lock(key),
    (key) => {
      const keys = lockKeys(prefix, key);
      return { key, hash: keys.lock, fence: keys.fence };
    },
    (client, key, owner) => client.lock(key).isHeldBy(owner),
    (isolate, key) => ({
      holds: "exclusive",
      run: () => isolate.client.lock(key).forceRelease(),
    }),
    { push },
  );
}

export function fairLockPrimitive(
  prefix: string,
  observer: Observer,
  push?: PushWaiting,
): ChaosPrimitive {
  return lockFamily(
    "fair lock",
    observer,
    (isolate, key) => isolate.client.fairLock(key),
    (key) => {
      const keys = fairLockKeys(prefix, key);
      return {
        key,
        hash: keys.lock,
        queue: keys.queue,
        timeouts: keys.timeouts,
        fence: keys.fence,
      };
    },
    (client, key, owner) => client.fairLock(key).isHeldBy(owner),
    (isolate, key) => ({
      holds: "exclusive",
      run: () => isolate.client.fairLock(key).forceRelease(),
    }),
    { push },
  );
}

/** Read holds in `sharedRate` of the sections (writer preference on, the default). */
export function readWriteLockPrimitive(
  prefix: string,
  observer: Observer,
  push?: PushWaiting,
  sharedRate = 0.6,
): ChaosPrimitive {
  const family = lockFamily(
    "read-write lock",
    observer,
    (isolate, key, plan) => {
      const rw = isolate.client.readWriteLock(key);
      return plan.shared ? rw.readLock() : rw.writeLock();
    },
    (key) => {
      const keys = readWriteLockKeys(prefix, key);
      return { key, hash: keys.lock, reads: keys.reads, fence: keys.fence };
    },
    async (client, key, owner) => {
      const rw = client.readWriteLock(key);
      const [writing, reading] = await Promise.all([
        rw.writeLock().isHeldBy(owner),
        rw.readLock().isHeldBy(owner),
      ]);
      return writing || reading;
    },
    (isolate, key, random, heldAs) => {
      const rw = isolate.client.readWriteLock(key);
      // Mostly the side held now (a 50/50 pick met no hold in whole short runs); sometimes the other.
      const exclusive =
        heldAs === undefined ? random() < 0.5 : (heldAs === "exclusive") === random() < 0.8;
      return exclusive
        ? { holds: "exclusive", run: () => rw.writeLock().forceRelease() }
        : { holds: "shared", run: () => rw.readLock().forceRelease() };
    },
    { sharedRate, push },
  );
  return {
    ...family,
    readHold: (isolate, key, owner, leaseMs, waitMs) =>
      isolate.client.readWriteLock(key).readLock().acquire({ owner, leaseMs, waitMs }),
  };
}

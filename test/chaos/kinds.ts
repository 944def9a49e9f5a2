/** The lock kinds a chaos run can drive, by name: how many databases each needs and its adapter. */
import type { ChaosConfig } from "./config.js";
import { durableObjectLockPrimitive } from "./durable-object.js";
import type { ChaosEnvironment } from "./environment.js";
import type { ChaosPrimitive } from "./primitive.js";
import {
  fairLockPrimitive,
  pushWaiting,
  readWriteLockPrimitive,
  reentrantLockPrimitive,
  subscriptionWaiting,
} from "./primitives/lock.js";
import { multiLockPrimitive } from "./primitives/multi-lock.js";
import { redLockPrimitive } from "./primitives/red-lock.js";
import { semaphorePrimitive } from "./primitives/semaphore.js";

export interface ChaosKind {
  readonly name: string;
  /** Independent databases the kind needs. */
  readonly databases: number;
  /** Its fair-order check applies (it has a waiter queue). */
  readonly fair?: boolean;
  /** Its all-or-none check applies (a hold spans several keys). */
  readonly multi?: boolean;
  /**
   * Push hand-off over a subscription: its databases run the `upstash` profile (as production:
   * scripts under per-key locking, pops that never block), its isolates can subscribe, and the
   * run's subscription faults apply to their streams.
   */
  readonly subscribes?: boolean;
  /**
   * Some sections run as requests of nested scopes over two Workers clients, under the
   * connection budget (config.requestRate, request-budget.ts).
   */
  readonly requests?: boolean;
  /**
   * The run's config as this kind takes it (default: as given), e.g. fewer keys, so that its
   * waiters meet busy keys as often as a lock's do.
   */
  tune?(config: ChaosConfig): ChaosConfig;
  create(env: ChaosEnvironment, config: ChaosConfig): ChaosPrimitive;
}

export const KINDS = {
  lock: {
    name: "lock",
    databases: 1,
    create: (env) => reentrantLockPrimitive(env.prefix, env.observer),
  },
  fair: {
    name: "fair lock",
    databases: 1,
    fair: true,
    create: (env) => fairLockPrimitive(env.prefix, env.observer),
  },
  "lock-push": {
    name: "lock (push)",
    databases: 1,
    create: (env, config) =>
      reentrantLockPrimitive(env.prefix, env.observer, pushWaiting(env, config)),
  },
  "fair-push": {
    name: "fair lock (push)",
    databases: 1,
    fair: true,
    create: (env, config) => fairLockPrimitive(env.prefix, env.observer, pushWaiting(env, config)),
  },
  "lock-sub": {
    name: "lock (push, subscription)",
    databases: 1,
    requests: true,
    subscribes: true,
    create: (env, config) =>
      reentrantLockPrimitive(env.prefix, env.observer, subscriptionWaiting(env, config)),
  },
  "fair-sub": {
    name: "fair lock (push, subscription)",
    databases: 1,
    requests: true,
    fair: true,
    subscribes: true,
    create: (env, config) =>
      fairLockPrimitive(env.prefix, env.observer, subscriptionWaiting(env, config)),
  },
  rw: {
    name: "read-write lock",
    databases: 1,
    create: (env) => readWriteLockPrimitive(env.prefix, env.observer),
  },
  "rw-push": {
    name: "read-write lock (push)",
    databases: 1,
    create: (env, config) =>
      readWriteLockPrimitive(env.prefix, env.observer, pushWaiting(env, config)),
  },
  "rw-sub": {
    name: "read-write lock (push, subscription)",
    databases: 1,
    requests: true,
    subscribes: true,
    // Readers around a parked writer: parks long enough that one not re-timed when a read hold
    // ends early outlasts the crashed reader's lease by more than the liveness base bound.
    tune: (config) =>
      config.readersAroundWriterEveryMs > 0
        ? { ...config, push: { ...config.push, parkMs: Math.max(config.push.parkMs, 1_500) } }
        : config,
    create: (env, config) =>
      // Fewer read holds than rw-push's 60 %: readers poll, the words are for writers.
      readWriteLockPrimitive(env.prefix, env.observer, subscriptionWaiting(env, config), 0.2),
  },
  multi: {
    name: "multi-lock",
    databases: 1,
    multi: true,
    create: (env, config) => multiLockPrimitive(env.prefix, env.observer, config.keys),
  },
  semaphore: {
    name: "semaphore",
    databases: 1,
    create: (env, config) =>
      semaphorePrimitive(env.prefix, env.observer, 3, undefined, resized(config)),
  },
  "semaphore-sub": {
    name: "semaphore (push, subscription)",
    databases: 1,
    requests: true,
    subscribes: true,
    // Half the keys, so that waiters park and releases grant (over the run's keys, 3 permits
    // each, few would wait); twice the isolates with half the holders each, so that as many
    // streams open (one per isolate and key) and meet the stream faults.
    tune: (config) => ({
      ...config,
      keys: Math.ceil(config.keys / 2),
      isolates: config.isolates * 2,
      holdersPerIsolate: Math.ceil(config.holdersPerIsolate / 2),
    }),
    create: (env, config) =>
      semaphorePrimitive(
        env.prefix,
        env.observer,
        3,
        subscriptionWaiting(env, config),
        config.capacityChanges.subscription ? resized(config) : undefined,
      ),
  },
  do: {
    name: "lock (Durable Object watchdog)",
    databases: 1,
    create: (env, config) => durableObjectLockPrimitive(env, config),
  },
  redlock: {
    name: "RedLock",
    databases: 3,
    create: (env) => redLockPrimitive(env.prefix, env.databases),
  },
} as const satisfies Record<string, ChaosKind>;

export type ChaosKindName = keyof typeof KINDS;

/** A semaphore of 3 whose capacity an administrator moves between 1 and 5 (when the run does). */
function resized(config: ChaosConfig): { multiPermitRate: number; max: number } | undefined {
  return config.capacityChanges.everyMs > 0
    ? { multiPermitRate: config.capacityChanges.multiPermitRate, max: 5 }
    : undefined;
}

export const KIND_NAMES = Object.keys(KINDS) as ChaosKindName[];

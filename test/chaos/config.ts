/** The knobs of a chaos run, and the two presets: the short CI run and the long run. */

import { subscriptionParkLimitMs } from "../../src/wait/push/wake.js";
import type { CapacityChangeOptions } from "./capacity-changes.js";
import type { SubscriptionFaultOptions } from "./subscription-faults.js";

export type ChaosBackend = "auto" | "redis-server" | "embedded";

export interface ChaosConfig {
  /** Seeds the workload's choices and the server's faults; print it to replay a run. */
  readonly seed: number;
  /** Lock operations to start (acquire, tryAcquire, re-entry, extend, release). */
  readonly operations: number;
  /** Fraction of requests refused before running (half) or answered into the void (half). */
  readonly faultRate: number;
  readonly backend: ChaosBackend;
  /** Simulated isolates: each its own Redis client, LockClient and renewer. */
  readonly isolates: number;
  /** Concurrent holders per isolate, each with its own owner per critical section. */
  readonly holdersPerIsolate: number;
  /** Lock keys the holders compete for. */
  readonly keys: number;
  /** Lease of lease-mode holds, in ms. */
  readonly leaseMs: number;
  /** The clients' watchdogTimeoutMs (lease of watchdog-mode holds), in ms. */
  readonly watchdogTimeoutMs: number;
  /** Fraction of critical sections held in watchdog mode (the rest use a lease). */
  readonly watchdogRate: number;
  /** Fraction of acquisitions made with tryAcquire (a single attempt). */
  readonly tryRate: number;
  /** Fraction of sections that re-enter their lock once. */
  readonly reentryRate: number;
  /** Fraction of lease-mode sections that extend their lease once. */
  readonly extendRate: number;
  /** Fraction of sections whose holder crashes (stops without releasing, stops renewing). */
  readonly crashRate: number;
  /** Fraction of sections that hold about one lease long (a paused holder). */
  readonly longHoldRate: number;
  /** How long an `acquire` waits for a busy key, in ms. */
  readonly waitMs: number;
  /** The isolates' polling policy: short backoff ceilings keep hand-offs (and the run) fast. */
  readonly wait: { readonly initialDelayMs: number; readonly maxDelayMs: number };
  /**
   * The push kinds' waiting (`wait.mode: "push"`): parks shorter than `requestTimeoutMs` minus a
   * spike's latency (a longer one would be given up on by the client), and the shortest claim
   * window, so that holds longer than it confirm their lease after a hand-off.
   */
  readonly push: { readonly parkMs: number; readonly claimMs: number };
  /** Latency spikes past the lease: every `everyMs`, for `durationMs`, `latencyMs` per request. */
  readonly spike: {
    readonly everyMs: number;
    readonly durationMs: number;
    readonly latencyMs: number;
  };
  /** How often a dead holder's lock is probed (through the fault-free observer), in ms. */
  readonly probeIntervalMs: number;
  /** Probing stops (and the holder counts as never freed) this long past its bound, in ms. */
  readonly giveUpAfterMs: number;
  /** An operation still pending after this is counted as hung, in ms. */
  readonly hangAfterMs: number;
  /** Fraction of requests the proxy hangs until the client gives up (counted as faulted). */
  readonly hangRate: number;
  /** The isolates' Redis clients give up on a request after this long, in ms. */
  readonly requestTimeoutMs: number;
  /** How often the observer reads the whole state of the run's keys, in ms. */
  readonly sampleIntervalMs: number;
  /** A lost hold's signal may abort this long past its confirmed deadline (timers under load). */
  readonly signalSlackMs: number;
  /**
   * Fraction of sections run as a group of 2–3 concurrent tasks sharing one owner (as the tasks
   * of one request scope do): they hold, wait, abort and release concurrently.
   */
  readonly siblingRate: number;
  /** Fraction of sibling tasks whose acquire gets an AbortSignal that fires after a short while. */
  readonly siblingAbortRate: number;
  /**
   * An administrator's `forceRelease()` of a random key, every `forceReleaseEveryMs` on average
   * (kinds that have one; 0: never).
   */
  readonly forceReleaseEveryMs: number;
  /** The client layer that re-sends late (see late-copies.ts). */
  readonly lateCopies: {
    readonly rate: number;
    readonly minDelayMs: number;
    readonly maxDelayMs: number;
  };
  /** Push kinds: fraction of sections whose waiter is killed as soon as it parks. */
  readonly killParkedRate: number;
  /**
   * The subscription kinds (`wait.wakeBy: "subscription"`): faults on the words and streams the
   * isolates' lock clients read (subscription-faults.ts). A late word comes up to `lateMaxMs`
   * late: past the claim window (`push.claimMs`) about half the time.
   */
  readonly subscription: SubscriptionFaultOptions;
  /**
   * The liveness check (invariants.ts, checkLiveness): how long, in ms, the observer may see a key
   * free for its waiters while one of them is live, with nothing on that key to excuse it (a
   * fault the docs let cost one park, a dead waiter's registration, a spike): polling kinds (a
   * waiter at the head past the expected release polls within `wait.maxDelayMs`; one further back
   * sleeps to its expected turn) and push kinds (the release hands over inside Redis; a grant
   * nobody claims lapses after `push.claimMs`, and the waiter behind, told when, takes it then).
   */
  readonly liveness: { readonly pollIdleMs: number; readonly pushIdleMs: number };
  /**
   * The Durable Object kind: fraction of re-entries of a watchdog-mode hold made, in watchdog
   * mode, through another isolate's LockClient given the hold's owner (another invocation passing
   * `owner`), released soon while the first holder holds on for three leases (issue 41 case 0).
   */
  readonly reentryElsewhereRate: number;
  /**
   * Read-write kinds woken by word (`rw-sub`): every this many ms on average (0: never), two read
   * holds taken on a key outside the sections — one with a long lease, one with the run's lease
   * whose holder then crashes — and, once a writer waits there, the long one released early:
   * the parked writer must hold soon after the crashed reader's lease ends (issue 41 case 8). The
   * kind's parks last at least 1.5 s then, so that a park not re-timed shows past the base bound.
   */
  readonly readersAroundWriterEveryMs: number;
  /**
   * The check "a grant to a live waiter is the hold it gets" (FIFO kinds told by word: fair-sub,
   * semaphore-sub; issue 41 cases 2 and 10).
   */
  readonly checkGrantsKept: boolean;
  /**
   * Kinds with the request pattern (`requests` in kinds.ts: the `*-sub` kinds): fraction of
   * sections run as one request — an outer `client.scope()` whose 2–3 sub-tasks, in nested scopes
   * over two Workers clients of the isolate, wait on one key — under the connection budget the
   * harness enforces (request-budget.ts; issue 41 case 9). 0: never.
   */
  readonly requestRate: number;
  /** Sabotage: each sub-task in a top-level scope of its own (the scopes share no request). */
  readonly requestScopesApart?: boolean;
  /**
   * The semaphore kinds: an administrator's capacity changes under parked waiters, and owners
   * asking for 2 or 3 permits (capacity-changes.ts; issue 41 case 3). `everyMs` 0: neither.
   */
  readonly capacityChanges: CapacityChangeOptions;
}

/** The short seeded run inside `npm test`: a few seconds per backend. */
export const SHORT_RUN: ChaosConfig = {
  seed: 20_260_915,
  operations: 400,
  faultRate: 0.12,
  backend: "auto",
  isolates: 4,
  holdersPerIsolate: 3,
  keys: 4,
  leaseMs: 200,
  watchdogTimeoutMs: 200,
  watchdogRate: 0.3,
  tryRate: 0.15,
  reentryRate: 0.2,
  extendRate: 0.15,
  crashRate: 0.03,
  longHoldRate: 0.02,
  waitMs: 3_000,
  wait: { initialDelayMs: 5, maxDelayMs: 40 },
  push: { parkMs: 500, claimMs: 200 },
  spike: { everyMs: 700, durationMs: 100, latencyMs: 300 },
  probeIntervalMs: 20,
  giveUpAfterMs: 10_000,
  hangAfterMs: 30_000,
  hangRate: 0.01,
  requestTimeoutMs: 1_000,
  sampleIntervalMs: 15,
  signalSlackMs: 100,
  // Higher than the long run's: a short run must meet an aborted sibling wait.
  siblingRate: 0.25,
  siblingAbortRate: 0.8,
  forceReleaseEveryMs: 600,
  // Short delays: pending copies are dropped at the end, and the run waits for those in flight.
  lateCopies: { rate: 0.04, minDelayMs: 50, maxDelayMs: 1_500 },
  killParkedRate: 0.08,
  // Higher than the long run's: 120 operations must meet every fault.
  subscription: {
    lostRate: 0.35,
    lateRate: 0.3,
    lateMaxMs: 600,
    neverConfirmRate: 0.12,
    silentEndRate: 0.15,
    errorEndRate: 0.15,
    serverEndRate: 0.15,
    endWithinMs: 800,
    killRate: 0.25,
  },
  // Push: the claim window (200 ms), and a head that polls by its turn (its stream not yet
  // confirmed) waking a little after an early release: a fault-free fair-sub run showed 444 ms.
  liveness: { pollIdleMs: 1_000, pushIdleMs: 600 },
  reentryElsewhereRate: 0.7,
  readersAroundWriterEveryMs: 400,
  checkGrantsKept: true,
  // A request is 4–6 waits: enough of them in 120 operations to reach the stream budget.
  requestRate: 0.15,
  // Kept low past the bound of a waiter that no longer fits (the longest lease + the base bound).
  capacityChanges: { everyMs: 250, multiPermitRate: 0.3, keepLowMs: 1_500, subscription: false },
};

/**
 * `npm run chaos`: at least 100 000 lock operations over all kinds (split evenly) with at least
 * 10 % of requests faulted.
 */
export const LONG_RUN: ChaosConfig = {
  ...SHORT_RUN,
  seed: 1,
  operations: 100_000,
  isolates: 8,
  holdersPerIsolate: 4,
  keys: 16,
  leaseMs: 500,
  watchdogTimeoutMs: 500,
  crashRate: 0.01,
  longHoldRate: 0.01,
  spike: { everyMs: 4_000, durationMs: 250, latencyMs: 750 },
  push: { parkMs: 1_000, claimMs: 200 },
  requestTimeoutMs: 2_000,
  sampleIntervalMs: 25,
  siblingRate: 0.1,
  siblingAbortRate: 0.4,
  forceReleaseEveryMs: 1_500,
  lateCopies: { rate: 0.03, minDelayMs: 50, maxDelayMs: 4_000 },
  killParkedRate: 0.03,
  requestRate: 0.05,
  capacityChanges: { ...SHORT_RUN.capacityChanges, subscription: true },
  subscription: {
    lostRate: 0.05,
    lateRate: 0.05,
    lateMaxMs: 400,
    neverConfirmRate: 0.03,
    silentEndRate: 0.04,
    errorEndRate: 0.04,
    serverEndRate: 0.04,
    endWithinMs: 5_000,
    killRate: 0.05,
  },
};

/**
 * The longest one park of a run's push waiters: `parkMs` on a blocking pop; over a subscription
 * a park may last a share of the time waited, or to an expected turn within the same share of
 * the whole wait (WAITED_PARK_SHARE), and no wait is longer than `waitMs`.
 */
export function longestParkMs(config: ChaosConfig, subscribes: boolean): number {
  const { parkMs } = config.push;
  return subscribes ? subscriptionParkLimitMs(parkMs, config.waitMs, false) : parkMs;
}

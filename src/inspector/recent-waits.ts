/**
 * The recent waits of one client, kept in this process for the inspector (`GET api/waits`) and
 * `edgelock inspect waits`: nothing in Redis, a bounded buffer here.
 */
import type { LockEvent } from "../events.js";
import type { PlainLockClient as LockClient } from "../plain-lock-client.js";
import { checkCount, checkOptions, orDefault } from "../validate.js";
import type { InspectedWaits, RecentWait, RecentWaitStep } from "./types.js";

/** Options of `recordRecentWaits()`: how much it keeps. */
export interface RecentWaitsOptions {
  /**
   * Finished waits kept; a newer one replaces the oldest.
   * @default 50
   */
  maxWaits?: number;
  /**
   * Steps kept per wait: the first half and the last half of them when a wait has more (the
   * rest are counted in `droppedSteps`). At least 2.
   * @default 20
   */
  maxSteps?: number;
}

/** The recorder `recordRecentWaits()` returns: give it to `inspector()` as `recentWaits`. */
export interface RecentWaitsRecorder extends Disposable {
  /** The finished waits kept, newest first. */
  waits(): RecentWait[];
  /** The answer of `GET api/waits`. */
  inspect(): InspectedWaits;
  /** Unsubscribes from the client; what was kept stays readable. Same as `[Symbol.dispose]()`. */
  stop(): void;
}

const DEFAULT_MAX_WAITS = 50;
const DEFAULT_MAX_STEPS = 20;
/**
 * Waits in progress followed at most: each ends with `acquired` or `notAcquired`, but one whose
 * end never came (a throw between the two) must not be kept for ever.
 */
const MAX_WAITS_IN_PROGRESS = 1_000;
/** The most `maxWaits` or `maxSteps` may be: a buffer, not a log. */
const MAX_KEPT = 10_000;

type WaitStepEvent = Extract<LockEvent, { type: "waitStep" }>;
type WaitEndEvent = Extract<LockEvent, { type: "acquired" | "notAcquired" }>;

/** The steps of one wait in progress: the first `headMax`, then a ring of the last `tailMax`. */
class StepsKept {
  readonly head: RecentWaitStep[] = [];
  readonly tail: RecentWaitStep[] = [];
  private next = 0;
  dropped = 0;

  constructor(
    private readonly headMax: number,
    private readonly tailMax: number,
  ) {}

  add(step: RecentWaitStep): void {
    if (this.head.length < this.headMax) this.head.push(step);
    else if (this.tail.length < this.tailMax) this.tail.push(step);
    else {
      this.tail[this.next] = step;
      this.next = (this.next + 1) % this.tailMax;
      this.dropped += 1;
    }
  }

  inOrder(): RecentWaitStep[] {
    return [...this.head, ...this.tail.slice(this.next), ...this.tail.slice(0, this.next)];
  }
}

/**
 * Keeps the last `maxWaits` finished waits of `client` (lock, fair lock, read and write locks,
 * semaphore): name, outcome, time waited, requests and each step with the
 * `why` of its sleep. It listens to `waitStep`, so the client builds the trace while it records.
 * Per process (a Worker isolate): the inspector shows the waits of the isolate that answers.
 * @example
 * const waits = recordRecentWaits(client);
 * app.all("/_edgelock/*", inspector({ client, auth: () => "read", recentWaits: waits }));
 */
export function recordRecentWaits(
  client: LockClient,
  options: RecentWaitsOptions = {},
): RecentWaitsRecorder {
  const given = checkOptions<RecentWaitsOptions>(options, "recent waits options", [
    "maxWaits",
    "maxSteps",
  ]);
  const maxWaits = orDefault(given.maxWaits, DEFAULT_MAX_WAITS, (value) =>
    checkCount(value, "maxWaits", 1, MAX_KEPT),
  );
  const maxSteps = orDefault(given.maxSteps, DEFAULT_MAX_STEPS, (value) =>
    checkCount(value, "maxSteps", 2, MAX_KEPT),
  );
  const inProgress = new Map<number, StepsKept>();
  // Oldest first; trimmed from the front.
  const finished: RecentWait[] = [];

  function stepsOf(waitId: number): StepsKept {
    let steps = inProgress.get(waitId);
    if (steps === undefined) {
      steps = new StepsKept(Math.ceil(maxSteps / 2), Math.floor(maxSteps / 2));
      inProgress.set(waitId, steps);
      // A Map iterates in insertion order: the first key is the wait followed longest.
      if (inProgress.size > MAX_WAITS_IN_PROGRESS) {
        const oldest = inProgress.keys().next().value;
        if (oldest !== undefined) inProgress.delete(oldest);
      }
    }
    return steps;
  }

  function onStep(event: WaitStepEvent): void {
    const { attempt, answer, durationMs, holderTtlMs, delayMs, why } = event;
    stepsOf(event.waitId).add({ attempt, answer, durationMs, holderTtlMs, delayMs, why });
  }

  function onEnd(event: WaitEndEvent): void {
    const steps = inProgress.get(event.waitId);
    inProgress.delete(event.waitId);
    const acquired = event.type === "acquired";
    finished.push({
      id: event.waitId,
      name: event.name,
      outcome: event.type,
      reason: acquired ? null : event.reason,
      handOff: acquired ? event.handOff : false,
      endedAt: Date.now(),
      waitedMs: event.waitedMs,
      requests: event.requests,
      steps: steps?.inOrder() ?? [],
      droppedSteps: steps?.dropped ?? 0,
    });
    if (finished.length > maxWaits) finished.splice(0, finished.length - maxWaits);
  }

  const stops = [
    client.on("waitStep", onStep),
    client.on("acquired", onEnd),
    client.on("notAcquired", onEnd),
  ];
  function stop(): void {
    for (const unsubscribe of stops) unsubscribe();
    inProgress.clear();
  }
  const waits = () => finished.slice().reverse();
  return {
    waits,
    inspect: () => ({ recording: true, takenAt: Date.now(), maxWaits, maxSteps, waits: waits() }),
    stop,
    [Symbol.dispose]: stop,
  };
}

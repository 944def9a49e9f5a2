/**
 * Chaos for the count-down latch (`client.countDownLatch`): rounds on fresh latches, each run by
 * several isolates through the faulty server (refused requests, lost answers, latency spikes,
 * hangs, late re-sent copies). A round: one or two isolates race `trySetCount` (distinct counts);
 * then isolates count it down (some crash with their request in flight: sent, never answered),
 * others `await()` it and read `count()`. One round in ten is abandoned: a short-lived latch
 * (ttl 1 s) counted down part-way, then left to expire.
 *
 * With `push` (the `latch-sub` kind) every `await()` waits in push mode over a subscription to
 * the latch's channel, where the countDown that reaches 0 publishes `opened`: the server runs the
 * `upstash` profile and the run's subscription faults apply to the isolates' streams (words lost
 * or late, streams never confirmed or ending mid-way, subscription-faults.ts). The checks are the
 * same.
 *
 * The observer never trusts the client: it reads the latch's key straight from Redis through the
 * fault-free connection (a sampler while the round runs, a reading right after each `await()`
 * that answered true, and a final one once every request of the round, re-sends included, is
 * over), and checks:
 * - the count never goes below 0, never above the largest count a set sent (that did not answer
 *   false), and rises only by such a set sent before the reading; its ttl never exceeds the
 *   latch's;
 * - a fresh latch is won by exactly one of the racing sets (all answered), which left its count;
 * - exactly-once: after the round, the count lies between `set − countDowns sent` and
 *   `set − countDowns answered` (a call whose answer was lost may or may not have counted); the
 *   answered remainders are distinct and none is below the final count; every `count()` answer
 *   lies between the final count and the set count;
 * - `await()` answered true only when the observer, reading right after, found the latch open
 *   (in a round where the count cannot rise again); false only once its `waitMs` had passed;
 * - no latch outlives its ttl: past the last moment a set could have run plus the ttl, the key
 *   is gone.
 */
import { createPrng } from "../../dev/rest/faults.js";
import { latchKeys } from "../../src/locks/count-down-latch/keys.js";
import { Script } from "../../src/transport/call.js";
import type { WaitOptions } from "../../src/wait/policy.js";
import type { ChaosConfig } from "./config.js";
import { type ChaosEnvironment, createIsolate, startEnvironment } from "./environment.js";
import { type InvariantResult, Tally } from "./invariants.js";
import type { LateCopyCounts } from "./late-copies.js";
import { textOf } from "./operations.js";
import type { ChaosIsolate } from "./primitive.js";
import { startSpikes } from "./spikes.js";
import type { SubscriptionCounts } from "./subscription-faults.js";
import { type RequestCounts, subscriptionEnvironment } from "./workload.js";

/** What the workload calls: the latch, or a sabotaged stand-in. */
export interface LatchUnderTest {
  trySetCount(count: number): Promise<boolean>;
  countDown(): Promise<number>;
  count(): Promise<number>;
  /** `wait`: push mode over a subscription (the `push` option), else the client's policy. */
  await(options: { waitMs: number; wait?: WaitOptions }): Promise<boolean>;
}

export interface LatchChaosOptions {
  /** Builds the latch each call goes through. Default: `isolate.client.countDownLatch`. */
  readonly latch?: (
    env: ChaosEnvironment,
    isolate: ChaosIsolate,
    name: string,
    ttlMs: number,
  ) => LatchUnderTest;
  readonly onProgress?: (operationsStarted: number) => void;
  /**
   * Every `await()` in push mode (`parkMs` of the run's `push`), over a subscription: the server
   * on the `upstash` profile, the run's subscription faults on the isolates' streams.
   */
  readonly push?: boolean;
}

/** What the latch's streams met (`push`): the subscription faults' counts that apply to it. */
export type LatchSubscriptionCounts = Pick<
  SubscriptionCounts,
  | "streams"
  | "confirmed"
  | "neverConfirmed"
  | "endedSilently"
  | "endedWithError"
  | "latchWords"
  | "latchWordsLost"
  | "latchWordsLate"
  | "cutOff"
>;

export interface LatchChaosResult {
  readonly primitive: "count-down latch" | "count-down latch (push, subscription)";
  readonly backend: string;
  readonly seed: number;
  readonly startedAt: string;
  readonly elapsedMs: number;
  readonly operations: {
    readonly total: number;
    readonly byKind: Readonly<Record<OperationName, number>>;
    /** How calls ended, e.g. `{ "countDown: ok": 900, "countDown: LockBackendError": 40 }`. */
    readonly outcomes: Readonly<Record<string, number>>;
  };
  readonly rounds: {
    readonly total: number;
    /** Rounds whose set is known (every set answered): the exactly-once bounds are checked. */
    readonly exact: number;
    /** Rounds with a set that failed (it may still run, late): only the bounds of all rounds. */
    readonly ambiguous: number;
    /** Short-lived latches left to expire. */
    readonly abandoned: number;
    /** countDown calls whose isolate crashed with the request in flight. */
    readonly crashedCountDowns: number;
    /** await() calls that answered true / false. */
    readonly awaitsOpened: number;
    readonly awaitsTimedOut: number;
  };
  readonly requests: RequestCounts;
  readonly lateCopies: LateCopyCounts;
  /** With `push`: the isolates' streams and the `opened` words on them, with their faults. */
  readonly subscriptions?: LatchSubscriptionCounts;
  /** Observer readings (sampler, after-await and final). */
  readonly samples: number;
  readonly invariants: readonly InvariantResult[];
  readonly violations: number;
}

type OperationName = "trySetCount" | "countDown" | "await" | "count";

const LONG_TTL_MS = 60_000;
/** The shortest ttl the latch accepts: abandoned latches expire quickly. */
const SHORT_TTL_MS = 1_000;
const ABANDON_RATE = 0.1;
/** Clock granularity between the harness and the server, in ms. */
const TOLERANCE_MS = 25;
/**
 * Count downs start within this long of the awaits, in ms. In push mode longer: an await's
 * stream takes a few round trips to be confirmed, and a latch that opened before that is found
 * open by a read, the word unheard; spread out, most awaits are told by word.
 */
const COUNT_DOWN_SPREAD_MS = { poll: 60, push: 400 };

// KEYS: latch count keys. Reply: {seconds, microseconds, GET or '', PTTL, GET or '', PTTL, ...}.
const READ_LATCHES = new Script(
  "chaos.latches",
  `local time = redis.call('TIME')
local reply = {time[1], time[2]}
for i = 1, #KEYS do
  reply[#reply + 1] = redis.call('GET', KEYS[i]) or ''
  reply[#reply + 1] = redis.call('PTTL', KEYS[i])
end
return reply`,
);

/** One observer reading of one latch: `count` (the raw value; absent: 0), `pttl` (-2: absent). */
interface Reading {
  readonly sentAt: number;
  readonly answeredAt: number;
  readonly count: number;
  readonly raw: string;
  readonly pttl: number;
}

interface Call<T> {
  readonly sentAt: number;
  settledAt: number;
  /** undefined while pending; crashed: the isolate died with it in flight. */
  outcome?: { ok: true; value: T } | { ok: false; error: string };
  crashed?: boolean;
}

interface SetCall extends Call<boolean> {
  readonly count: number;
}

interface AwaitCall extends Call<boolean> {
  readonly waitMs: number;
  /** The observer's reading right after it answered true. */
  after?: Reading;
}

interface Round {
  readonly name: string;
  readonly countKey: string;
  readonly ttlMs: number;
  readonly abandoned: boolean;
  readonly sets: SetCall[];
  readonly countDowns: Call<number>[];
  readonly awaits: AwaitCall[];
  readonly counts: Call<number>[];
  /** Sampler readings where the count changed (and the first). */
  readonly transitions: Reading[];
  /** The observer's reading after phase A (all sets settled). */
  afterSets?: Reading;
  final?: Reading;
  /** When its last request (not counting late copies) settled. */
  lastSettledAt: number;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function runLatchChaos(
  config: ChaosConfig,
  operations: number,
  options: LatchChaosOptions = {},
): Promise<LatchChaosResult> {
  const env = await startEnvironment({
    ...config,
    maxHangMs: config.requestTimeoutMs * 4,
    lateCopies: config.lateCopies,
    ...(options.push === true ? subscriptionEnvironment(config) : {}),
  });
  try {
    return await runIn(env, config, operations, options);
  } finally {
    await env.close();
  }
}

async function runIn(
  env: ChaosEnvironment,
  config: ChaosConfig,
  target: number,
  options: LatchChaosOptions,
): Promise<LatchChaosResult> {
  const random = createPrng(config.seed ^ 0x1a7c4);
  const isolates = Array.from({ length: config.isolates }, (_, id) =>
    createIsolate(env, id, config),
  );
  const latchOf =
    options.latch ??
    ((_env: ChaosEnvironment, isolate: ChaosIsolate, name: string, ttlMs: number) =>
      isolate.client.countDownLatch(name, { ttlMs }));
  const anyIsolate = () => isolates[Math.floor(random() * isolates.length)]!;
  const wait: WaitOptions | undefined =
    options.push === true ? { mode: "push", parkMs: config.push.parkMs } : undefined;
  const byKind: Record<OperationName, number> = {
    trySetCount: 0,
    countDown: 0,
    await: 0,
    count: 0,
  };
  const outcomes: Record<string, number> = {};
  /** Every call not settled yet (a crashed isolate's included: its request is still out). */
  const inFlight = new Set<Promise<unknown>>();
  let started = 0;
  let samples = 0;
  let crashedCountDowns = 0;

  const tallies = {
    bounds: new Tally("latch count stays in [0, largest set sent] and rises only by a set"),
    ttl: new Tally("latch ttl never exceeds the ttl it was set with"),
    oneWinner: new Tally("a fresh latch is won by exactly one racing set, which left its count"),
    exactlyOnce: new Tally("final count within [set − countDowns sent, set − countDowns answered]"),
    remainders: new Tally("countDown remainders distinct and not below the final count"),
    reads: new Tally("count() answers lie between the final count and the set count"),
    awaitTrue: new Tally("await() true only when the observer then finds the latch open"),
    awaitFalse: new Tally("await() false only after its waitMs"),
    expiry: new Tally("no latch outlives its ttl (key gone past last possible set + ttl)"),
    secrets: new Tally("no error shows the REST token"),
  };

  /** Reads latches through the fault-free observer, atomically. */
  const observe = async (rounds: readonly Round[]): Promise<Reading[]> => {
    const sentAt = Date.now();
    const reply = await READ_LATCHES.run(
      env.observer.raw,
      rounds.map((round) => round.countKey),
      [],
    );
    const answeredAt = Date.now();
    if (!Array.isArray(reply) || reply.length !== rounds.length * 2 + 2) {
      throw new Error("chaos: unexpected latch reading");
    }
    samples += 1;
    return rounds.map((round, i) => {
      const raw = String(reply[2 + 2 * i]);
      const pttl = Number(reply[3 + 2 * i]);
      const reading = { sentAt, answeredAt, raw, count: raw === "" ? 0 : Number(raw), pttl };
      tallies.ttl.check(
        pttl <= round.ttlMs,
        () => `${round.name}: pttl ${pttl} ms > ttl ${round.ttlMs} ms`,
      );
      return reading;
    });
  };

  /** Runs one call, filing how it ended; `crash`: the isolate dies with it in flight. */
  const call = <T, C extends Call<T>>(
    kind: OperationName,
    record: C,
    list: C[],
    round: Round,
    operation: () => Promise<T>,
  ): Promise<C> => {
    started += 1;
    byKind[kind] += 1;
    list.push(record);
    options.onProgress?.(started);
    const settled = operation().then(
      (value) => {
        record.settledAt = Date.now();
        round.lastSettledAt = Math.max(round.lastSettledAt, record.settledAt);
        if (!record.crashed) record.outcome = { ok: true, value };
        const label = `${kind}: ${record.crashed ? "crashed" : "ok"}`;
        outcomes[label] = (outcomes[label] ?? 0) + 1;
        return record;
      },
      (error: unknown) => {
        record.settledAt = Date.now();
        round.lastSettledAt = Math.max(round.lastSettledAt, record.settledAt);
        const name = error instanceof Error ? error.name : "untyped";
        if (!record.crashed) record.outcome = { ok: false, error: name };
        const label = `${kind}: ${record.crashed ? "crashed" : name}`;
        outcomes[label] = (outcomes[label] ?? 0) + 1;
        const text = textOf(error);
        tallies.secrets.check(!text.includes(env.server.token), () => `${kind}: ${text}`);
        return record;
      },
    );
    inFlight.add(settled);
    void settled.then(() => inFlight.delete(settled));
    return settled;
  };

  // The sampler: reads every active round's latch every sampleIntervalMs, keeping the changes.
  const active = new Set<Round>();
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const rounds = [...active];
      if (rounds.length > 0) {
        const readings = await observe(rounds).catch(() => undefined);
        readings?.forEach((reading, i) => {
          const { transitions } = rounds[i]!;
          const last = transitions.at(-1);
          if (last === undefined || last.raw !== reading.raw) transitions.push(reading);
        });
      }
      await pause(config.sampleIntervalMs);
    }
  })();

  let ended = false;
  let announceEnd = () => {};
  const end = new Promise<void>((resolve) => {
    announceEnd = resolve;
  });
  /** Waits `ms`, or less once the run has ended (then nothing of a round runs any more). */
  const waitOrEnd = async (ms: number) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      end,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, ms);
      }),
    ]);
    clearTimeout(timer);
  };
  /** How long after a request was sent a copy of it (with its retries) may still run. */
  const copyReachMs = config.lateCopies.maxDelayMs + 6 * config.requestTimeoutMs + 5_000;
  const rounds: Round[] = [];
  const finals: Promise<void>[] = [];

  const runRound = async (worker: number, index: number) => {
    // The second round of the first worker is always abandoned: every run meets one.
    const abandoned = (worker === 0 && index === 1) || random() < ABANDON_RATE;
    const name = `latch-${worker}-${index}`;
    const round: Round = {
      name,
      countKey: latchKeys(env.prefix, name).count,
      ttlMs: abandoned ? SHORT_TTL_MS : LONG_TTL_MS,
      abandoned,
      sets: [],
      countDowns: [],
      awaits: [],
      counts: [],
      transitions: [],
      lastSettledAt: Date.now(),
    };
    rounds.push(round);
    active.add(round);
    const latch = () => latchOf(env, anyIsolate(), name, round.ttlMs);
    // Phase A: one or two isolates race to set distinct counts on the fresh latch.
    const n = 1 + Math.floor(random() * 6);
    const setters = random() < 0.3 ? 2 : 1;
    await Promise.all(
      Array.from({ length: setters }, (_, i) => {
        const record: SetCall = { sentAt: Date.now(), settledAt: 0, count: n + i };
        return call("trySetCount", record, round.sets, round, () => latch().trySetCount(n + i));
      }),
    );
    round.afterSets = (await observe([round]))[0];
    // Phase B: count downs (some past the count, some short of it), awaits, reads.
    const draw = random();
    const downs = abandoned
      ? Math.floor(random() * n)
      : draw < 0.5
        ? n
        : draw < 0.8
          ? Math.floor(random() * n)
          : n + 1 + Math.floor(random() * 2);
    const opens = !abandoned && downs >= n;
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < downs; i++) {
      const delay = random() * COUNT_DOWN_SPREAD_MS[wait === undefined ? "poll" : "push"];
      const crashes = random() < config.crashRate * 4;
      work.push(
        pause(delay).then(() => {
          const record: Call<number> = { sentAt: Date.now(), settledAt: 0 };
          const done = call("countDown", record, round.countDowns, round, () =>
            latch().countDown(),
          );
          if (!crashes) return done;
          // The isolate crashed with the request in flight: nobody hears its answer.
          record.crashed = true;
          crashedCountDowns += 1;
          return undefined;
        }),
      );
    }
    const awaiters = 1 + (random() < 0.4 ? 1 : 0);
    for (let i = 0; i < awaiters; i++) {
      const waitMs = Math.round(
        abandoned ? SHORT_TTL_MS + 1_500 : opens ? 1_000 + random() * 2_000 : 100 + random() * 400,
      );
      const record: AwaitCall = { sentAt: Date.now(), settledAt: 0, waitMs };
      work.push(
        call("await", record, round.awaits, round, () =>
          latch().await(wait === undefined ? { waitMs } : { waitMs, wait }),
        ).then(async (done) => {
          if (done.outcome?.ok === true && done.outcome.value) {
            done.after = (await observe([round]))[0];
          }
        }),
      );
    }
    if (random() < 0.5) {
      work.push(
        pause(random() * 60).then(() =>
          call("count", { sentAt: Date.now(), settledAt: 0 }, round.counts, round, () =>
            latch().count(),
          ),
        ),
      );
    }
    await Promise.all(work);
    // Keep sampling a little (answers lost, copies late), then read it once all is over.
    finals.push(
      (async () => {
        await waitOrEnd(500);
        active.delete(round);
        const lastSet = Math.max(...round.sets.map((set) => set.settledAt));
        const ambiguous = round.sets.some((set) => set.outcome?.ok !== true);
        const finalAt = round.abandoned
          ? lastSet + (ambiguous ? copyReachMs : 0) + round.ttlMs + TOLERANCE_MS
          : round.lastSettledAt + copyReachMs;
        await waitOrEnd(finalAt - Date.now());
        if (ended) {
          // No request runs any more: a set ran by the last copy's answer at the latest.
          const settled = Math.max(lastSet, env.lateCopies.lastSettledAt);
          const expiresBy = settled + round.ttlMs + TOLERANCE_MS;
          if (round.abandoned && expiresBy > Date.now()) await pause(expiresBy - Date.now());
        }
        round.final = (await observe([round]))[0];
      })(),
    );
  };

  env.server.stats.reset();
  env.server.faults.resetCounts();
  const hangsBefore = env.hangs();
  const startedAt = new Date();
  const spikes = startSpikes([env.server.faults], config.spike);
  const workers = Array.from({ length: config.keys }, async (_, worker) => {
    for (let index = 0; started < target; index++) await runRound(worker, index);
  });
  try {
    await Promise.all(workers);
  } finally {
    spikes.stop();
  }
  const elapsedMs = Date.now() - startedAt.getTime();
  const counts = env.server.faults.counts();
  const hangsAfter = env.hangs();
  // The crashed isolates' requests still out, then the copies: pending ones never arrive, those
  // in flight are waited for (with the faults on).
  while (inFlight.size > 0) await Promise.all([...inFlight]);
  await env.lateCopies.stop();
  ended = true;
  announceEnd();
  await Promise.all(finals);
  sampling = false;
  await sampler;
  env.server.faults.disable();

  const roundFigures = check(rounds, tallies);
  const hangs = {
    requests: hangsAfter.requests - hangsBefore.requests,
    before: hangsAfter.hungBeforeExecute - hangsBefore.hungBeforeExecute,
    after: hangsAfter.hungAfterExecute - hangsBefore.hungAfterExecute,
  };
  const faulted =
    counts.failBeforeExecute +
    counts.dropAfterExecute +
    counts.delayed +
    hangs.before +
    hangs.after;
  const invariants = Object.values(tallies).map((tally) => tally.result());
  return {
    primitive: options.push === true ? "count-down latch (push, subscription)" : "count-down latch",
    backend: env.server.backendDescription,
    seed: config.seed,
    startedAt: startedAt.toISOString(),
    elapsedMs,
    operations: {
      total: started,
      byKind,
      outcomes: Object.fromEntries(Object.entries(outcomes).sort()),
    },
    rounds: { ...roundFigures, total: rounds.length, crashedCountDowns },
    requests: {
      total: hangs.requests,
      failedBeforeExecute: counts.failBeforeExecute,
      droppedAfterExecute: counts.dropAfterExecute,
      delayedBySpike: counts.delayed,
      spikes: spikes.count,
      hungBeforeExecute: hangs.before,
      hungAfterExecute: hangs.after,
      faultedFraction: hangs.requests === 0 ? 0 : faulted / hangs.requests,
    },
    lateCopies: env.lateCopies.counts(),
    ...(env.subscriptions === undefined
      ? {}
      : { subscriptions: latchSubscriptionCounts(env.subscriptions.counts) }),
    samples,
    invariants,
    violations: invariants.reduce((sum, invariant) => sum + invariant.violations, 0),
  };
}

function latchSubscriptionCounts(counts: SubscriptionCounts): LatchSubscriptionCounts {
  const { streams, confirmed, neverConfirmed, endedSilently, endedWithError } = counts;
  const { latchWords, latchWordsLost, latchWordsLate, cutOff } = counts;
  return {
    streams,
    confirmed,
    neverConfirmed,
    endedSilently,
    endedWithError,
    latchWords,
    latchWordsLost,
    latchWordsLate,
    cutOff,
  };
}

type Tallies = Record<
  | "bounds"
  | "ttl"
  | "oneWinner"
  | "exactlyOnce"
  | "remainders"
  | "reads"
  | "awaitTrue"
  | "awaitFalse"
  | "expiry"
  | "secrets",
  Tally
>;

/** The invariants over the rounds, from the observer's readings and the calls' records. */
function check(
  rounds: readonly Round[],
  tallies: Tallies,
): { exact: number; ambiguous: number; abandoned: number } & {
  awaitsOpened: number;
  awaitsTimedOut: number;
} {
  let exact = 0;
  let ambiguous = 0;
  let awaitsOpened = 0;
  let awaitsTimedOut = 0;
  for (const round of rounds) {
    const { name, sets } = round;
    const afterAwaits = round.awaits.flatMap((each) => (each.after ? [each.after] : []));
    const readings = [round.afterSets!, ...round.transitions, ...afterAwaits, round.final!].sort(
      (a, b) => a.sentAt - b.sentAt,
    );
    // Sets that may have run: all but those that answered false.
    const mayHaveSet = sets.filter((set) => !(set.outcome?.ok === true && !set.outcome.value));
    const largest = Math.max(0, ...mayHaveSet.map((set) => set.count));
    let previous = 0;
    for (const reading of readings) {
      const integral = reading.raw === "" || /^[0-9]+$/.test(reading.raw);
      const risesBySet =
        reading.count <= previous ||
        mayHaveSet.some((set) => set.count >= reading.count && set.sentAt <= reading.answeredAt);
      tallies.bounds.check(
        integral && reading.count >= 0 && reading.count <= largest && risesBySet,
        () =>
          `${name}: read ${JSON.stringify(reading.raw)} after ${previous} (sets ${sets
            .map((set) => `${set.count}→${JSON.stringify(set.outcome)}`)
            .join(", ")})`,
      );
      previous = reading.count;
    }
    const allAnswered = sets.every((set) => set.outcome?.ok === true);
    const winners = sets.filter((set) => set.outcome?.ok === true && set.outcome.value);
    if (!allAnswered) ambiguous += 1;
    if (!round.abandoned && allAnswered) {
      tallies.oneWinner.check(
        winners.length === 1 && round.afterSets!.count === winners[0]!.count,
        () =>
          `${name}: sets ${sets.map((set) => `${set.count}→${JSON.stringify(set.outcome)}`).join(", ")}, ` +
          `then read ${round.afterSets!.count}`,
      );
    }
    // Awaits: false only after waitMs (every round).
    for (const each of round.awaits) {
      if (each.outcome?.ok !== true) continue;
      if (each.outcome.value) awaitsOpened += 1;
      else {
        awaitsTimedOut += 1;
        tallies.awaitFalse.check(
          each.settledAt - each.sentAt >= each.waitMs,
          () => `${name}: await false after ${each.settledAt - each.sentAt} ms < ${each.waitMs}`,
        );
      }
    }
    // No latch outlives its ttl: an abandoned latch's final reading is past its bound.
    if (round.abandoned) {
      tallies.expiry.check(
        round.final!.pttl === -2,
        () => `${name}: still there (count ${round.final!.raw}, pttl ${round.final!.pttl})`,
      );
    }
    // Every set answered (a re-sent one replays): once open, nothing closes the latch again.
    if (allAnswered) {
      for (const each of round.awaits) {
        if (each.outcome?.ok !== true || !each.outcome.value) continue;
        tallies.awaitTrue.check(
          each.after !== undefined && each.after.count === 0,
          () =>
            `${name}: await true at ${each.settledAt}, then the observer read ${each.after?.raw}`,
        );
      }
    }
    // The count can only rise by a set; with every set answered it is one known count.
    if (round.abandoned || !allAnswered || winners.length !== 1) continue;
    exact += 1;
    const set = winners[0]!.count;
    const final = round.final!.count;
    const answered = round.countDowns.filter((each) => each.outcome?.ok === true);
    const sent = round.countDowns.length;
    const low = Math.max(0, set - sent);
    const high = Math.max(0, set - answered.length);
    tallies.exactlyOnce.check(
      low <= final && final <= high,
      () =>
        `${name}: set ${set}, ${sent} countDowns sent, ${answered.length} answered: final ${final} ∉ [${low}, ${high}]`,
    );
    const left = answered.map((each) => (each.outcome as { value: number }).value);
    const positive = left.filter((value) => value > 0);
    tallies.remainders.check(
      new Set(positive).size === positive.length && left.every((value) => value >= final),
      () => `${name}: set ${set}, remainders ${left.join(", ")}, final ${final}`,
    );
    for (const each of round.counts) {
      if (each.outcome?.ok !== true) continue;
      const value = each.outcome.value;
      tallies.reads.check(
        final <= value && value <= set,
        () => `${name}: count() ${value} outside [${final}, ${set}]`,
      );
    }
  }
  const abandoned = rounds.filter((round) => round.abandoned).length;
  return { exact, ambiguous, abandoned, awaitsOpened, awaitsTimedOut };
}

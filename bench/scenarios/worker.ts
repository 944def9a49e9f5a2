/**
 * Scenario 6, the Worker: the bench's Worker (bench/worker) in workerd through wrangler, against
 * the bench backend's REST server (same latency model). For each library, `requests` concurrent
 * POSTs increment one counter (GET, then SET, inside the lock); a 409 (lock still busy) is sent
 * again at once. Counts the lock's commands per increment from the server's stats, and checks
 * that the counter is exact.
 */
import { Redis } from "@upstash/redis";
import type { BenchBackend } from "../backend/backend.js";
import { wireDelta } from "../backend/backend.js";
import type { LatencyModel } from "../backend/protocol.js";
import { percentile } from "../metrics.js";
import {
  BURST_SECTION_MS,
  BURST_WAIT_MS,
  burstPath,
  counterKey,
  INVOCATION_STARTED_HEADER,
  LOCK_COMMANDS_HEADER,
  SECTION_STARTED_HEADER,
  WORKER_LIBRARIES,
  type WorkerLibrary,
} from "../worker/routes.js";
import { startBenchWorker } from "../worker/start.js";
import { freshKey } from "./contention.js";

export interface WorkerSettings {
  /** Concurrent increments per library. */
  readonly requests: number;
  readonly libraries: readonly WorkerLibrary[];
  /** Concurrent requests of the cold burst (0: no cold burst). */
  readonly burstRequests: number;
}

/**
 * The first burst to a fresh isolate: `requests` concurrent POSTs to a Worker just started, each
 * a BURST_SECTION_MS section under a lock waited for BURST_WAIT_MS, none sent again.
 */
export interface ColdBurstResult {
  readonly library: WorkerLibrary;
  readonly label: string;
  /** "cold": the isolate's first requests; "warm": the same burst again on that isolate. */
  readonly isolate: "cold" | "warm";
  readonly latency: string;
  readonly requests: number;
  readonly sectionMs: number;
  readonly waitMs: number;
  /** Answered 200: held the lock and ran the section. */
  readonly served: number;
  /** Answered 409: the lock stayed busy for the whole wait (or the poll budget ran out). */
  readonly busy: number;
  /** Other answers or network errors. */
  readonly errors: number;
  readonly firstError?: string;
  /** The serial bound: waitMs / (sectionMs + R), the most a lock could serve within the wait. */
  readonly servedBound: number;
  /** Billed commands of the burst (every command Redis ran; the section sends none). */
  readonly billedCommands: number;
  /** Commands the REST server ran, by name: `eval` is the full script text sent. */
  readonly commandsByName: Readonly<Record<string, number>>;
  /** Full script texts sent (EVAL), each ~4 KB of body. */
  readonly fullEvals: number;
  /** First send → the first 200, and → the last 200 (ms). */
  readonly firstServedMs: number;
  readonly lastServedMs: number;
  /** First send → each 409 (ms), p50. */
  readonly busyAtP50Ms: number;
  /**
   * First send → the Worker beginning each invocation (its clock against the bench's; both
   * local), p50 and max: how long the isolate took to take the requests up.
   */
  readonly invocationStartP50Ms: number;
  readonly invocationStartMaxMs: number;
  /** First send → the first section holding the lock. */
  readonly firstSectionMs: number;
  /** Mean time from one section's start to the next's: the section + the hand-off. */
  readonly sectionCycleMs: number;
  /**
   * Served requests among the first, second … tenth of the requests in send order: whether the
   * lock serves its waiters in arrival order.
   */
  readonly servedByArrivalDecile: readonly number[];
}

export interface WorkerResult {
  readonly library: WorkerLibrary;
  readonly label: string;
  readonly latency: string;
  /** Increments asked for (concurrent requests, not counting re-sends). */
  readonly requests: number;
  /** Requests answered 200 (incremented). */
  readonly increments: number;
  /** 409 answers (the lock stayed busy for the library's whole wait), each sent again. */
  readonly resends: number;
  /** Other answers or network errors; such a request is not sent again. */
  readonly errors: number;
  readonly firstError?: string;
  /** The counter's final value: must equal `increments`. */
  readonly counter: number;
  readonly exact: boolean;
  readonly elapsedMs: number;
  readonly incrementsPerSec: number;
  /** Uncontended REST round trip under the latency model (from Node, measured before the runs). */
  readonly roundTripMs: number;
  /** increments × 3R: a GET and a SET inside the lock, one round trip to hand it off. */
  readonly idealMs: number;
  readonly efficiency: number;
  /** Every command the server ran for the lock: all commands − the counter's GET and SET. */
  readonly lockCommands: number;
  readonly lockCommandsPerIncrement: number;
  /** The lock's billed commands per increment: each command its scripts ran counted too. */
  readonly billedLockCommandsPerIncrement: number;
  /** Hand-off words pushed to subscribed waiters (push over a subscription), per increment. */
  readonly pushedPerIncrement: number;
  /** The lock's commands as the Worker counted them (LOCK_COMMANDS_HEADER): should match. */
  readonly lockCommandsSeenByWorker: number;
  /** The most lock commands one invocation (one HTTP request to the Worker) sent. */
  readonly maxLockCommandsPerInvocation: number;
  /**
   * Invocations whose subrequests (lock commands, + GET and SET when it incremented) exceed
   * SUBREQUEST_LIMIT, the Workers free plan's limit per invocation.
   */
  readonly invocationsOverSubrequestLimit: number;
  /** HTTP requests to the REST server (Workers subrequests, pipelines count 1) per increment. */
  readonly httpRequestsPerIncrement: number;
  /** Commands the server ran, by name (the counter's GET and SET included). */
  readonly commandsByName: Readonly<Record<string, number>>;
  /** First send → 200, per increment. */
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
}

const LABELS: Record<WorkerLibrary, string> = {
  edgelock: "edgelock withLock() (defaults)",
  "edgelock-poll": "edgelock poll",
  "edgelock-push": "edgelock push",
  "edgelock-blind": "edgelock blind",
  "upstash-lock": "@upstash/lock",
};

/** The cold burst runs edgelock at its defaults and polling, and @upstash/lock. */
const BURST_LIBRARIES: readonly WorkerLibrary[] = ["edgelock", "edgelock-poll", "upstash-lock"];

/** Subrequests per invocation on the Workers free plan. */
export const SUBREQUEST_LIMIT = 50;

/** A request that keeps getting 409 gives up after this many re-sends (counted as an error). */
const MAX_RESENDS = 50;

/**
 * The libraries of the Worker scenario among the bench's peers (`--peers`, `--no-blind`,
 * `--no-push`).
 */
export function workerLibraries(
  peers: readonly string[],
  blind: boolean,
  push: boolean,
): WorkerLibrary[] {
  return WORKER_LIBRARIES.filter((library) => {
    if (library === "edgelock-blind") return blind && peers.includes("edgelock");
    if (library === "edgelock-push") return push && peers.includes("edgelock");
    if (library === "edgelock-poll") return peers.includes("edgelock");
    return peers.includes(library);
  });
}

/** One answer of a burst, timed on the bench's clock from the first send. */
interface BurstAnswer {
  readonly status: number;
  readonly atMs: number;
  readonly invocationStartMs?: number | undefined;
  readonly sectionStartMs?: number | undefined;
  readonly error?: string;
}

/** The libraries of the cold burst among the Worker scenario's. */
export function coldBurstLibraries(settings: WorkerSettings): WorkerLibrary[] {
  if (settings.burstRequests === 0) return [];
  return settings.libraries.filter((library) => BURST_LIBRARIES.includes(library));
}

/**
 * The cold burst of each library: a Worker started for it alone (a fresh isolate: no client,
 * no cached script SHA, no learnt server capability), then `burstRequests` at once; then the
 * same burst again on that isolate, now warm, to tell what is the cold start's from what is the
 * burst's. Run after the warm runs, so the database already holds the scripts, as a production
 * one serving other isolates does.
 */
export async function runColdBursts(
  backend: BenchBackend,
  latency: LatencyModel,
  roundTripMs: number,
  settings: WorkerSettings,
  onRequest: () => void,
): Promise<ColdBurstResult[]> {
  const results: ColdBurstResult[] = [];
  for (const library of coldBurstLibraries(settings)) {
    const worker = await startBenchWorker(backend.restUrl, backend.token);
    try {
      for (const isolate of ["cold", "warm"] as const) {
        results.push(await burst(worker.url, library, isolate));
      }
    } finally {
      await worker.close();
    }
  }
  return results;

  async function burst(
    workerUrl: URL,
    library: WorkerLibrary,
    isolate: "cold" | "warm",
  ): Promise<ColdBurstResult> {
    const counter = freshKey(`worker-burst-${library}-${isolate}`);
    const url = new URL(burstPath(library, counter), workerUrl);
    const before = await backend.snapshot();
    const start = performance.now();
    const startEpoch = Date.now();
    const answers = await Promise.all(
      Array.from({ length: settings.burstRequests }, async (): Promise<BurstAnswer> => {
        try {
          const response = await fetch(url, { method: "POST" });
          await response.arrayBuffer();
          // The Worker's epoch clock against the bench's: both on this machine.
          const sinceStart = (name: string) => {
            const value = response.headers.get(name);
            return value === null ? undefined : Number(value) - startEpoch;
          };
          return {
            status: response.status,
            atMs: performance.now() - start,
            invocationStartMs: sinceStart(INVOCATION_STARTED_HEADER),
            sectionStartMs: sinceStart(SECTION_STARTED_HEADER),
          };
        } catch (error) {
          return {
            status: 0,
            atMs: performance.now() - start,
            error: error instanceof Error ? error.message : String(error),
          };
        } finally {
          onRequest();
        }
      }),
    );
    const after = await backend.snapshot();
    const wire = wireDelta(after.rest, before.rest);
    const { pushed: _pushed = 0, ...commandsByName } = wire.commandsByName;
    const served = answers.filter((a) => a.status === 200);
    const busy = answers.filter((a) => a.status === 409);
    const other = answers.filter((a) => a.status !== 200 && a.status !== 409);
    const decile = Math.max(1, Math.ceil(answers.length / 10));
    const invocationStarts = answers.flatMap((a) =>
      a.invocationStartMs === undefined ? [] : [a.invocationStartMs],
    );
    const sectionStarts = answers
      .flatMap((a) => (a.sectionStartMs === undefined ? [] : [a.sectionStartMs]))
      .sort((a, b) => a - b);
    const firstError =
      other[0] === undefined ? undefined : (other[0].error ?? `HTTP ${other[0].status}`);
    return {
      library,
      label: LABELS[library],
      isolate,
      latency: latency.name,
      requests: settings.burstRequests,
      sectionMs: BURST_SECTION_MS,
      waitMs: BURST_WAIT_MS,
      served: served.length,
      busy: busy.length,
      errors: other.length,
      ...(firstError === undefined ? {} : { firstError }),
      servedBound: Math.floor(BURST_WAIT_MS / (BURST_SECTION_MS + roundTripMs)),
      billedCommands: after.billed - before.billed,
      commandsByName,
      fullEvals: commandsByName.eval ?? 0,
      firstServedMs: Math.min(...served.map((a) => a.atMs)),
      lastServedMs: Math.max(...served.map((a) => a.atMs)),
      busyAtP50Ms: percentile(
        busy.map((a) => a.atMs),
        0.5,
      ),
      invocationStartP50Ms: percentile(invocationStarts, 0.5),
      invocationStartMaxMs: Math.max(...invocationStarts),
      firstSectionMs: sectionStarts[0] ?? Number.NaN,
      sectionCycleMs:
        sectionStarts.length < 2
          ? Number.NaN
          : (sectionStarts.at(-1)! - sectionStarts[0]!) / (sectionStarts.length - 1),
      // Requests are sent in index order (Node's fetch opens a connection each, at once).
      servedByArrivalDecile: Array.from(
        { length: Math.ceil(answers.length / decile) },
        (_, d) =>
          answers.slice(d * decile, (d + 1) * decile).filter((a) => a.status === 200).length,
      ),
    };
  }
}

export async function runWorkerScenario(
  backend: BenchBackend,
  latency: LatencyModel,
  roundTripMs: number,
  settings: WorkerSettings,
  onIncrement: () => void,
): Promise<WorkerResult[]> {
  const worker = await startBenchWorker(backend.restUrl, backend.token);
  const redis = new Redis({ url: backend.restUrl, token: backend.token });
  try {
    const post = (library: WorkerLibrary, counter: string) =>
      fetch(new URL(`/${library}/${encodeURIComponent(counter)}`, worker.url), { method: "POST" });
    // Warm-up off the clock: the isolate loads, its clients are built, the scripts are cached.
    for (const library of settings.libraries) {
      const response = await post(library, freshKey(`worker-warm-${library}`));
      if (response.status !== 200) {
        throw new Error(`bench Worker warm-up: ${library} answered ${response.status}`);
      }
      await response.arrayBuffer();
    }
    const results: WorkerResult[] = [];
    for (const library of settings.libraries) {
      const counter = freshKey(`worker-${library}`);
      let resends = 0;
      let errors = 0;
      let firstError: string | undefined;
      const latencies: number[] = [];
      const lockCommandsPerInvocation: number[] = [];
      let invocationsOverLimit = 0;
      const before = await backend.snapshot();
      const start = performance.now();
      await Promise.all(
        Array.from({ length: settings.requests }, async () => {
          const sentAt = performance.now();
          for (let attempt = 0; attempt <= MAX_RESENDS; attempt++) {
            try {
              const response = await post(library, counter);
              await response.arrayBuffer();
              const lockCommands = Number(response.headers.get(LOCK_COMMANDS_HEADER) ?? 0);
              lockCommandsPerInvocation.push(lockCommands);
              const counterCommands = response.status === 200 ? 2 : 0;
              if (lockCommands + counterCommands > SUBREQUEST_LIMIT) invocationsOverLimit += 1;
              if (response.status === 200) {
                latencies.push(performance.now() - sentAt);
                onIncrement();
                return;
              }
              if (response.status !== 409) {
                firstError ??= `HTTP ${response.status}`;
                break;
              }
              resends += 1;
            } catch (error) {
              firstError ??= error instanceof Error ? error.message : String(error);
              break;
            }
          }
          errors += 1;
        }),
      );
      const elapsedMs = performance.now() - start;
      const after = await backend.snapshot();
      const wire = wireDelta(after.rest, before.rest);
      const value = Number((await redis.get<number>(counterKey(counter))) ?? 0);
      const increments = latencies.length;
      // Each increment ran exactly one GET and one SET of the counter; the rest is the lock's.
      const counterGets = wire.commandsByName.get ?? 0;
      // Words pushed on hand-off streams are listed beside the commands, but are none.
      const { pushed = 0, ...byCommand } = wire.commandsByName;
      const commands = Object.values(byCommand).reduce((sum, n) => sum + n, 0);
      const lockCommands = commands - 2 * counterGets;
      const idealMs = increments * 3 * roundTripMs;
      results.push({
        library,
        label: LABELS[library],
        latency: latency.name,
        requests: settings.requests,
        increments,
        resends,
        errors,
        ...(firstError === undefined ? {} : { firstError }),
        counter: value,
        exact: value === increments && counterGets === increments,
        elapsedMs,
        incrementsPerSec: (increments / elapsedMs) * 1000,
        roundTripMs,
        idealMs,
        efficiency: idealMs / elapsedMs,
        lockCommands,
        lockCommandsPerIncrement: lockCommands / increments,
        // The counter's GET and SET are billed too: two per increment, the rest is the lock's.
        billedLockCommandsPerIncrement:
          (after.billed - before.billed - 2 * counterGets) / increments,
        pushedPerIncrement: pushed / increments,
        lockCommandsSeenByWorker: lockCommandsPerInvocation.reduce((sum, n) => sum + n, 0),
        maxLockCommandsPerInvocation: Math.max(0, ...lockCommandsPerInvocation),
        invocationsOverSubrequestLimit: invocationsOverLimit,
        httpRequestsPerIncrement: wire.requests / increments,
        commandsByName: wire.commandsByName,
        latencyP50Ms: percentile(latencies, 0.5),
        latencyP99Ms: percentile(latencies, 0.99),
      });
    }
    return results;
  } finally {
    await worker.close();
  }
}

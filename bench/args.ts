/** Command-line flags of `npm run bench`. */
import { parseArgs } from "node:util";
import { isServerProfile, type ServerProfile } from "../dev/profile/settings.js";
import type { WaitOptions } from "../src/wait/policy.js";
import type { LatencyModel } from "./backend/protocol.js";

export const USAGE = `npm run bench -- [options]

  --quick              about 2 minutes: N 2,8,32, K 3, fewer uncontended ops
  --scenarios LIST     which scenarios: 1 uncontended, 2 one key, 3 many keys, 4 fair/rw,
                       5 variable holds, 6 Worker (default 1,2,3,4,5,6)
  --n LIST             contenders on one key (default 2,8,32,128)
  --k N                critical sections per contender (default 10)
  --hold MS            hold time of each critical section (default 5)
  --latency LIST       injected round trips in ms (default 0,20)
  --jitter MS          ± uniform jitter of every non-zero round trip (default 5)
  --keys LIST          scenario 3: number of keys M (default 4,16)
  --many-n N           scenario 3: contenders (default 32)
  --var-n LIST         scenario 5: contenders on one key (default 8,32)
  --var-hold MS        scenario 5: mean of the log-normal holds (default 50)
  --var-cv X           scenario 5: coefficient of variation of the holds (default 1)
  --seed N             scenario 5: seed of the holds (default 1)
  --worker-requests N  scenario 6: concurrent increments per library (default 200; --quick 50)
  --burst-requests N   scenario 6: the cold burst, concurrent requests to a fresh isolate
                       (default 100; 0: none)
  --ops N              scenario 1: operations at 0 ms (default 500; a tenth at other latencies)
  --lease MS           lease of every lock, every library (default 10000)
  --peers LIST         edgelock,upstash-lock,redlock,redis-semaphore (default: all)
  --variants LIST      extra edgelock polling policies "initial/max[/maxPolls]", e.g. 5/100,20/500
                       (edgelock runs as "edgelock (defaults)", no wait option, and
                       "edgelock poll", wait.mode "poll", besides blind and push)
  --no-blind           leave out "edgelock blind" (polling, pace hints hidden: the backoff alone)
  --no-push            leave out "edgelock push" ("edgelock fair push" in scenario 4, the
                       /edgelock-push route in 6): the push hand-off, waiters parked on
                       on a blocking pop or a subscription and woken by the release
  --profile P          the REST server behaves as production Upstash (upstash, the default:
                       pops answer at once, so push mode waits over a subscription) or as a
                       Redis behind a REST proxy (redis: pops block, push mode parks on them)
  --upstash-delays LIST  extra @upstash/lock retry delays in ms, e.g. 10,50
  --json PATH          results (default bench/results/latest.json; --quick: quick.tmp.json)
  --svg PATH           chart (default docs/bench-contention.svg; --quick: none)
  --help
`;

export interface BenchArgs {
  readonly quick: boolean;
  readonly scenarios: ReadonlySet<number>;
  readonly contenderCounts: readonly number[];
  readonly sectionsPerContender: number;
  readonly holdMs: number;
  readonly latencies: readonly LatencyModel[];
  readonly keyCounts: readonly number[];
  readonly manyKeysContenders: number;
  readonly variableHolds: {
    readonly contenderCounts: readonly number[];
    readonly meanHoldMs: number;
    readonly coefficientOfVariation: number;
    readonly seed: number;
  };
  readonly workerRequests: number;
  /** Scenario 6's cold burst: concurrent requests to a fresh isolate (0: none). */
  readonly burstRequests: number;
  readonly uncontendedOps: number;
  readonly leaseMs: number;
  readonly peers: readonly string[];
  readonly variants: readonly WaitOptions[];
  /** Also run edgelock with the pace hints hidden (the blind backoff), for comparison. */
  readonly blind: boolean;
  /** Also run edgelock's push hand-off (`wait: { mode: "push" }`) beside its polling. */
  readonly push: boolean;
  readonly upstashDelays: readonly number[];
  /** Which server the REST server behaves like (dev/profile/settings.ts). */
  readonly profile: ServerProfile;
  readonly jsonPath: string;
  readonly svgPath: string | undefined;
  readonly help: boolean;
}

export const ALL_PEERS = ["edgelock", "upstash-lock", "redlock", "redis-semaphore"] as const;

export class UsageError extends Error {
  override readonly name = "UsageError";
}

function numbers(text: string, flag: string): number[] {
  const list = text.split(",").map((part) => Number(part.trim()));
  if (list.length === 0 || list.some((n) => !Number.isFinite(n) || n < 0)) {
    throw new UsageError(`--${flag} expects a comma-separated list of non-negative numbers`);
  }
  return list;
}

function positive(text: string, flag: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new UsageError(`--${flag} expects a positive integer`);
  return value;
}

function parseVariant(text: string): WaitOptions {
  const [initial, max, polls] = text.split("/").map(Number);
  if (initial === undefined || max === undefined || !(initial >= 1) || !(max >= initial)) {
    throw new UsageError(`--variants: "${text}" is not initial/max[/maxPolls]`);
  }
  return {
    mode: "poll",
    initialDelayMs: initial,
    maxDelayMs: max,
    ...(polls === undefined ? {} : { maxPolls: polls }),
  };
}

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    options: {
      quick: { type: "boolean", default: false },
      scenarios: { type: "string" },
      n: { type: "string" },
      k: { type: "string" },
      hold: { type: "string" },
      latency: { type: "string" },
      jitter: { type: "string" },
      keys: { type: "string" },
      "many-n": { type: "string" },
      "var-n": { type: "string" },
      "var-hold": { type: "string" },
      "var-cv": { type: "string" },
      seed: { type: "string" },
      "worker-requests": { type: "string" },
      "burst-requests": { type: "string" },
      ops: { type: "string" },
      lease: { type: "string" },
      peers: { type: "string" },
      variants: { type: "string" },
      "upstash-delays": { type: "string" },
      profile: { type: "string" },
      json: { type: "string" },
      svg: { type: "string" },
      "no-blind": { type: "boolean", default: false },
      "no-push": { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  const quick = values.quick ?? false;
  const jitter = values.jitter === undefined ? 5 : numbers(values.jitter, "jitter")[0]!;
  const latencies = numbers(values.latency ?? "0,20", "latency").map((ms) => ({
    name: ms === 0 ? "0 ms" : `${ms}±${jitter} ms`,
    latencyMs: ms,
    jitterMs: ms === 0 ? 0 : jitter,
  }));
  const profile = values.profile ?? "upstash";
  if (!isServerProfile(profile)) throw new UsageError("--profile must be upstash or redis");
  const peers = (values.peers ?? ALL_PEERS.join(",")).split(",").map((p) => p.trim());
  for (const peer of peers) {
    if (!(ALL_PEERS as readonly string[]).includes(peer)) {
      throw new UsageError(`--peers: unknown peer "${peer}" (known: ${ALL_PEERS.join(", ")})`);
    }
  }
  return {
    quick,
    scenarios: new Set(numbers(values.scenarios ?? "1,2,3,4,5,6", "scenarios")),
    contenderCounts: numbers(values.n ?? (quick ? "2,8,32" : "2,8,32,128"), "n").map((n) =>
      positive(String(n), "n"),
    ),
    sectionsPerContender: positive(values.k ?? (quick ? "3" : "10"), "k"),
    holdMs: numbers(values.hold ?? "5", "hold")[0]!,
    latencies,
    keyCounts: numbers(values.keys ?? "4,16", "keys").map((m) => positive(String(m), "keys")),
    manyKeysContenders: positive(values["many-n"] ?? "32", "many-n"),
    variableHolds: {
      contenderCounts: numbers(values["var-n"] ?? "8,32", "var-n").map((n) =>
        positive(String(n), "var-n"),
      ),
      meanHoldMs: positive(values["var-hold"] ?? "50", "var-hold"),
      coefficientOfVariation: numbers(values["var-cv"] ?? "1", "var-cv")[0]!,
      seed: Number(numbers(values.seed ?? "1", "seed")[0]),
    },
    workerRequests: positive(
      values["worker-requests"] ?? (quick ? "50" : "200"),
      "worker-requests",
    ),
    burstRequests:
      values["burst-requests"] === "0"
        ? 0
        : positive(values["burst-requests"] ?? "100", "burst-requests"),
    uncontendedOps: positive(values.ops ?? (quick ? "100" : "500"), "ops"),
    leaseMs: positive(values.lease ?? "10000", "lease"),
    peers,
    blind: !(values["no-blind"] ?? false),
    push: !(values["no-push"] ?? false),
    variants: (values.variants ?? "")
      .split(",")
      .filter((v) => v.trim() !== "")
      .map(parseVariant),
    upstashDelays:
      values["upstash-delays"] === undefined
        ? []
        : numbers(values["upstash-delays"], "upstash-delays"),
    profile,
    jsonPath: values.json ?? (quick ? "bench/results/quick.tmp.json" : "bench/results/latest.json"),
    svgPath: values.svg ?? (quick ? undefined : "docs/bench-contention.svg"),
    help: values.help ?? false,
  };
}

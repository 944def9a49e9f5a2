/**
 * `npm run chaos`: the long chaos run over every lock kind (100 000 lock operations in all, split
 * evenly; ≥ 10 % of requests faulted).
 *
 *   npm run chaos
 *   npm run chaos -- --kind fair --ops 20000 --seed 7 --fault-rate 0.2 --backend embedded
 *   tsx test/chaos/run.ts --short          # the preset of the CI run
 *
 * Prints a progress bar, the figures and the invariants, writes the JSON report to
 * bench/results/chaos-<date>.json (or --out), and exits 1 if any invariant broke.
 */
import { parseArgs } from "node:util";
import { progressBar } from "../../dev/progress.js";
import { runConcurrencyLimitChaos } from "./concurrency-limit.js";
import { type ChaosBackend, type ChaosConfig, LONG_RUN, SHORT_RUN } from "./config.js";
import { runIdempotencyChaos } from "./idempotency.js";
import { type ChaosKindName, KIND_NAMES, KINDS } from "./kinds.js";
import { runLatchChaos } from "./latch.js";
import {
  defaultReportPath,
  formatKindTable,
  formatReport,
  type KindRow,
  kindRowOf,
  writeReport,
} from "./report.js";
import { type ChaosResult, runChaos } from "./workload.js";

const USAGE = `usage: tsx test/chaos/run.ts [--long | --short] [--kind ${[...KIND_NAMES, "latch", "latch-sub", "idempotency", "concurrency-limit"].join("|")}]...
       [--ops N (total over the kinds)] [--seed N] [--fault-rate R] [--hang-rate R]
       [--backend auto|redis-server|embedded] [--isolates N] [--holders N] [--keys N] [--out FILE]`;

const { values } = parseArgs({
  options: {
    long: { type: "boolean", default: false },
    short: { type: "boolean", default: false },
    ops: { type: "string" },
    seed: { type: "string" },
    "fault-rate": { type: "string" },
    "hang-rate": { type: "string" },
    kind: { type: "string", multiple: true },
    backend: { type: "string" },
    isolates: { type: "string" },
    holders: { type: "string" },
    keys: { type: "string" },
    out: { type: "string" },
    help: { type: "boolean", default: false },
  },
});

if (values.help) {
  console.log(USAGE);
  process.exit(0);
}

function integer(flag: string, text: string | undefined, fallback: number, min = 1): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) fail(`--${flag} must be an integer ≥ ${min}`);
  return value;
}

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

function backendOf(text: string | undefined, fallback: ChaosBackend): ChaosBackend {
  if (text === undefined) return fallback;
  if (text === "auto" || text === "redis-server" || text === "embedded") return text;
  return fail(`--backend must be auto, redis-server or embedded`);
}

const preset = values.short ? SHORT_RUN : LONG_RUN;
const faultRate =
  values["fault-rate"] === undefined ? preset.faultRate : Number(values["fault-rate"]);
if (!(faultRate >= 0 && faultRate <= 1)) fail("--fault-rate must be between 0 and 1");
const hangRate = values["hang-rate"] === undefined ? preset.hangRate : Number(values["hang-rate"]);
if (!(hangRate >= 0 && hangRate <= 1)) fail("--hang-rate must be between 0 and 1");
/** Besides the lock kinds: `idempotency()`, driven through a Hono app (deliveries count as operations). */
const IDEMPOTENCY = "idempotency";
/** The count-down latch: rounds of set / count down / await, checked by the observer (latch.ts). */
const LATCH = "latch";
/** The latch with every await() in push mode over a subscription, under subscription faults. */
const LATCH_SUB = "latch-sub";
/**
 * `concurrencyLimit()` driven through a Hono app, responses whose bodies are dropped among them
 * (requests count as operations; see concurrency-limit.ts).
 */
const CONCURRENCY_LIMIT = "concurrency-limit";
const ALL_NAMES = [...KIND_NAMES, LATCH, LATCH_SUB, IDEMPOTENCY, CONCURRENCY_LIMIT];
const chosen = values.kind ?? ALL_NAMES;
for (const name of chosen) {
  if (!ALL_NAMES.includes(name)) fail(`--kind must be one of ${ALL_NAMES.join(", ")}`);
}
const kinds = chosen.filter((name): name is ChaosKindName => name in KINDS);
const withIdempotency = chosen.includes(IDEMPOTENCY);
const withConcurrencyLimit = chosen.includes(CONCURRENCY_LIMIT);
const latchRuns = [
  ...(chosen.includes(LATCH) ? [{ push: false }] : []),
  ...(chosen.includes(LATCH_SUB) ? [{ push: true }] : []),
];
const config: ChaosConfig = {
  ...preset,
  operations: integer("ops", values.ops, preset.operations),
  seed: integer("seed", values.seed, preset.seed, 0),
  faultRate,
  hangRate,
  backend: backendOf(values.backend, preset.backend),
  isolates: integer("isolates", values.isolates, preset.isolates),
  holdersPerIsolate: integer("holders", values.holders, preset.holdersPerIsolate),
  keys: integer("keys", values.keys, preset.keys),
};

console.log(
  `edgelock chaos — ${config.operations} lock operations over ${chosen.join(", ")}, seed ${config.seed}, ` +
    `fault rate ${config.faultRate}, hang rate ${config.hangRate}, backend ${config.backend}`,
);
const perKind = Math.ceil(config.operations / chosen.length);
const results: ChaosResult[] = [];
const rows: KindRow[] = [];
for (const name of kinds) {
  const progress = progressBar(KINDS[name].name, perKind);
  const result = await runChaos(
    { ...config, operations: perKind },
    {
      kind: KINDS[name],
      onProgress: (done) => progress.update(Math.min(done, perKind)),
    },
  );
  progress.finish();
  console.log(`\n${formatReport(result)}\n`);
  results.push(result);
  rows.push(kindRowOf(result));
}
const latchResults: Awaited<ReturnType<typeof runLatchChaos>>[] = [];
for (const { push } of latchRuns) {
  const label = push ? "count-down latch (push, subscription)" : "count-down latch";
  const progress = progressBar(label, perKind);
  const latchResult = await runLatchChaos(config, perKind, {
    push,
    onProgress: (done) => progress.update(Math.min(done, perKind)),
  });
  progress.finish();
  console.log(`\n${label}: ${JSON.stringify(latchResult, null, 2)}\n`);
  latchResults.push(latchResult);
  rows.push({
    kind: latchResult.primitive,
    operations: latchResult.operations.total,
    requests: latchResult.requests.total,
    faultedFraction: latchResult.requests.faultedFraction,
    violations: latchResult.violations,
    elapsedMs: latchResult.elapsedMs,
  });
}
const idempotencyResult = withIdempotency ? await runIdempotencyChaos(config, perKind) : undefined;
if (idempotencyResult) {
  console.log(`idempotency(): ${JSON.stringify(idempotencyResult, null, 2)}\n`);
  rows.push({
    kind: idempotencyResult.primitive,
    operations: idempotencyResult.deliveries,
    requests: idempotencyResult.requests.total,
    faultedFraction: idempotencyResult.requests.faultedFraction,
    violations: idempotencyResult.violations,
    elapsedMs: idempotencyResult.elapsedMs,
  });
}
const concurrencyLimitResult = withConcurrencyLimit
  ? await runConcurrencyLimitChaos(config, perKind)
  : undefined;
if (concurrencyLimitResult) {
  console.log(`concurrencyLimit(): ${JSON.stringify(concurrencyLimitResult, null, 2)}\n`);
  rows.push({
    kind: concurrencyLimitResult.primitive,
    operations: concurrencyLimitResult.sent,
    requests: concurrencyLimitResult.requests.total,
    faultedFraction: concurrencyLimitResult.requests.faultedFraction,
    violations: concurrencyLimitResult.violations,
    elapsedMs: concurrencyLimitResult.elapsedMs,
  });
}
console.log(formatKindTable(rows));

const out = values.out ?? defaultReportPath(new Date().toISOString());
await writeReport(out, {
  kinds: results,
  latch: latchResults.find((result) => result.subscriptions === undefined),
  latchSub: latchResults.find((result) => result.subscriptions !== undefined),
  idempotency: idempotencyResult,
  concurrencyLimit: concurrencyLimitResult,
  table: rows,
});
console.log(`report: ${out}`);

const violations = rows.reduce((sum, row) => sum + row.violations, 0);
if (violations > 0) {
  console.error(`\nFAILED: ${violations} invariant violations (seed ${config.seed}).`);
  process.exit(1);
}
const total = rows.reduce((sum, row) => sum + row.operations, 0);
const requests = rows.reduce((sum, row) => sum + row.requests, 0);
const faulted = rows.reduce((sum, row) => sum + row.faultedFraction * row.requests, 0);
const longEnough = total >= 100_000 && faulted >= 0.1 * requests;
console.log(
  `\nOK: no violations.${longEnough ? " (≥ 100 000 operations, ≥ 10 % of requests faulted)" : ""}`,
);
// Done: timers an in-process object or a hung request left behind must not keep the run alive.
process.exit(0);

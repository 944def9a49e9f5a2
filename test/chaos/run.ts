/**
 * `npm run chaos`: the long chaos run (100 000 lock operations, ≥ 10 % of requests faulted).
 *
 *   npm run chaos
 *   npm run chaos -- --ops 20000 --seed 7 --fault-rate 0.2 --backend embedded
 *   tsx test/chaos/run.ts --short          # the preset of the CI run
 *
 * Prints a progress bar, the figures and the invariants, writes the JSON report to
 * bench/results/chaos-<date>.json (or --out), and exits 1 if any invariant broke.
 */
import { parseArgs } from "node:util";
import { progressBar } from "../../dev/progress.js";
import { type ChaosBackend, type ChaosConfig, LONG_RUN, SHORT_RUN } from "./config.js";
import { defaultReportPath, formatReport, writeReport } from "./report.js";
import { runChaos } from "./workload.js";

const USAGE = `usage: tsx test/chaos/run.ts [--long | --short] [--ops N] [--seed N] [--fault-rate R]
       [--backend auto|redis-server|embedded] [--isolates N] [--holders N] [--keys N] [--out FILE]`;

const { values } = parseArgs({
  options: {
    long: { type: "boolean", default: false },
    short: { type: "boolean", default: false },
    ops: { type: "string" },
    seed: { type: "string" },
    "fault-rate": { type: "string" },
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
const config: ChaosConfig = {
  ...preset,
  operations: integer("ops", values.ops, preset.operations),
  seed: integer("seed", values.seed, preset.seed, 0),
  faultRate,
  backend: backendOf(values.backend, preset.backend),
  isolates: integer("isolates", values.isolates, preset.isolates),
  holdersPerIsolate: integer("holders", values.holders, preset.holdersPerIsolate),
  keys: integer("keys", values.keys, preset.keys),
};

console.log(
  `edgelock chaos — ${config.operations} lock operations, seed ${config.seed}, ` +
    `fault rate ${config.faultRate}, backend ${config.backend}`,
);
const progress = progressBar("operations", config.operations);
const result = await runChaos(config, {
  onProgress: (done) => progress.update(Math.min(done, config.operations)),
});
progress.finish();
console.log(`\n${formatReport(result)}`);

const out = values.out ?? defaultReportPath(result.startedAt);
await writeReport(out, result);
console.log(`report: ${out}`);

if (result.violations > 0) {
  console.error(`\nFAILED: ${result.violations} invariant violations (seed ${config.seed}).`);
  process.exit(1);
}
const longEnough = result.operations.total >= 100_000 && result.requests.faultedFraction >= 0.1;
console.log(
  `\nOK: no violations.${longEnough ? " (≥ 100 000 operations, ≥ 10 % of requests faulted)" : ""}`,
);

/**
 * `npm run check:runtimes`: the conformance suite (suite.mjs, plain JS) against the packed
 * package, installed with npm into a scratch project, in every runtime the docs name, each a
 * step of its own with its own timeout:
 *
 * - Node 22 (the `node` devDependency npm scripts run on) and Node 24, Bun and Deno (from their
 *   npm packages; Deno twice: the project's node_modules, and `npm:` specifiers through an import
 *   map with no node_modules, both under the narrow permissions docs/runtimes.md states);
 * - Vercel's Edge runtime VM (the `edge-runtime` package): as deployed without a global
 *   AsyncLocalStorage, where `client.scope()` and `withLock({ client })` must fail with the
 *   Vercel advice; and with the global set from `node:async_hooks`, where everything passes;
 * - workerd through Miniflare: with `nodejs_compat`, and without it at a date that gives no
 *   AsyncLocalStorage, where the same two must fail naming `nodejs_compat`.
 *
 * Against `edgelock dev` from the packed package (embedded engine, `upstash` profile). Prints a
 * table (runtime × feature: ok / expected failure / FAIL) and writes it as JSON. A runtime whose
 * package could not be installed is skipped with a message, except under CI=true, where that
 * fails the run.
 *
 * docs/runtimes.md's table is this run's, between its `conformance-table` markers: a full run
 * that passed fails where the docs show another table (a version or a status changed), and with
 * `--write` writes the table there and the run to scripts/conformance/results.json instead (as
 * `npm run size -- --write` does docs/size.md's).
 *
 * Usage: npx tsx scripts/conformance/run.ts [--json FILE] [--only TEXT] [--keep] [--write]
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import {
  installBeside,
  npmInstall,
  packTarball,
  REPO_ROOT,
  RUNTIME_PACKAGES,
} from "../packed-project.js";

const HERE = join(REPO_ROOT, "scripts/conformance");
const SUITE_FILES = [
  "suite.mjs",
  "entry-node.mjs",
  "entry-edge.mjs",
  "entry-worker.mjs",
  "host-edge.mjs",
  "host-workerd.mjs",
];

/** The host process exits by itself once the suite is done (nothing left running). */
const EXITS = "exits when done";

/** The features whose failure is expected where AsyncLocalStorage is missing. */
const SCOPE_FEATURES = ["client.scope()", "Hono withLock()"];

/** Installed for real into the scratch project, at the versions this repository tests with. */
const USER_DEPENDENCIES = ["@upstash/redis", "hono"];

/**
 * What `@upstash/redis` 1.39 reads from the environment (docs/runtimes.md): `Redis.fromEnv()`
 * the URL and token; every client, for its telemetry header, UPSTASH_DISABLE_TELEMETRY,
 * UPSTASH_CONSOLE, VERCEL and AWS_REGION (Deno refuses the client without any one of them).
 * Vercel KV's KV_REST_API_URL/_TOKEN are read only where the URL or token is unset.
 */
export const DENO_ENV_ALLOW = [
  "UPSTASH_REDIS_REST_URL",
  "UPSTASH_REDIS_REST_TOKEN",
  "UPSTASH_DISABLE_TELEMETRY",
  "UPSTASH_CONSOLE",
  "VERCEL",
  "AWS_REGION",
];

/** A workerd compatibility date without AsyncLocalStorage unless `nodejs_compat` (docs/runtimes.md). */
const WITHOUT_ALS_DATE = "2026-08-01";

const INSTALL_TIMEOUT_MS = 180_000;
const STEP_TIMEOUT_MS = 180_000;

type Status = "ok" | "expected failure" | "FAIL";

interface SuiteRow {
  readonly feature: string;
  readonly status: "ok" | "unavailable" | "fail";
  readonly detail: string;
}

interface RuntimeResult {
  readonly runtime: string;
  /** The runtime and its version as docs/runtimes.md's table names it. */
  readonly label: string;
  readonly version: string;
  readonly seconds: number;
  readonly skipped?: string;
  readonly error?: string;
  readonly features: Record<string, { status: Status; detail: string }>;
}

interface Expectation {
  /** Whether the runtime gives owner scopes; where not, the error must match `scopeError`. */
  readonly scopes: boolean;
  readonly scopeError?: RegExp;
  readonly scopeErrorMustNot?: RegExp;
}

interface Server {
  readonly url: string;
  readonly token: string;
  readonly port: number;
  readonly child: ChildProcess;
}

/**
 * How long a host may take to exit by itself once it printed the suite's rows (a push waiter's
 * stream lingers 1 s for a next wait); longer fails its "exits when done" (Deno 2.9 once stayed
 * up: a hand-off stream left open, docs/runtimes.md).
 */
const EXIT_GRACE_MS = 10_000;

interface HostRun {
  readonly code: number | null;
  readonly output: string;
  /** The host printed its rows but did not exit within EXIT_GRACE_MS (then it was killed). */
  readonly lingered: boolean;
}

/** Runs a command to its end (or the timeout), collecting stdout and stderr together. */
function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs = STEP_TIMEOUT_MS,
): Promise<HostRun> {
  return new Promise((done) => {
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    let lingered = false;
    let grace: NodeJS.Timeout | undefined;
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      if (grace === undefined && /^CONFORMANCE_ROWS .*\n/m.test(output)) {
        grace = setTimeout(() => {
          lingered = true;
          child.kill("SIGKILL");
        }, EXIT_GRACE_MS);
      }
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    const timer = setTimeout(() => {
      output += `\n(killed after ${timeoutMs / 1000} s)`;
      child.kill("SIGKILL");
    }, timeoutMs);
    const finish = (code: number | null, extra = "") => {
      clearTimeout(timer);
      clearTimeout(grace);
      done({ code: lingered ? 0 : code, output: `${output}${extra}`, lingered });
    };
    child.on("error", (error) => finish(null, String(error)));
    child.on("close", (code) => finish(code));
  });
}

/** The rows a host printed (`CONFORMANCE_ROWS <json>`), or an error with its output. */
function rowsOf(result: HostRun): { rows: SuiteRow[]; lingered: boolean } {
  const line = /^CONFORMANCE_ROWS (.*)$/m.exec(result.output)?.[1];
  if (result.code !== 0 || line === undefined) {
    throw new Error(
      `exited ${result.code} without the suite's rows:\n${result.output.slice(-3000)}`,
    );
  }
  return { rows: JSON.parse(line) as SuiteRow[], lingered: result.lingered };
}

/** `edgelock dev` from the packed package: embedded engine, upstash profile, a free port. */
async function startDevServer(scratch: string, env: NodeJS.ProcessEnv): Promise<Server> {
  const child = spawn(
    join(scratch, "node_modules/.bin/edgelock"),
    ["dev", "--port", "0", "--backend", "embedded", "--profile", "upstash"],
    { cwd: scratch, env, stdio: ["ignore", "pipe", "pipe"] },
  );
  const banner = await new Promise<string>((found, failed) => {
    let output = "";
    const timer = setTimeout(
      () => failed(new Error(`edgelock dev did not start:\n${output}`)),
      30_000,
    );
    const listen = (chunk: Buffer) => {
      output += chunk.toString();
      if (/UPSTASH_REDIS_REST_TOKEN=\S+/.test(output)) {
        clearTimeout(timer);
        found(output);
      }
    };
    child.stdout.on("data", listen);
    child.stderr.on("data", listen);
    child.on("close", (code) => failed(new Error(`edgelock dev exited ${code}:\n${output}`)));
  });
  if (!/backend: embedded/.test(banner) || !/profile: upstash/.test(banner)) {
    throw new Error(`not the embedded engine on the upstash profile:\n${banner}`);
  }
  const url = /^UPSTASH_REDIS_REST_URL=(\S+)$/m.exec(banner)?.[1] ?? "";
  const token = /^UPSTASH_REDIS_REST_TOKEN=(\S+)$/m.exec(banner)?.[1] ?? "";
  return { url, token, port: Number(new URL(url).port), child };
}

/** Installs one runtime's package beside the project; null (and why) when it could not. */
function installRuntime(
  scratch: string,
  spec: string,
): { modules: string; seconds: number } | { failed: string } {
  const started = Date.now();
  const folder = `.runtime-${spec.replace(/[^a-z0-9]+/gi, "-")}`;
  try {
    const modules = installBeside(scratch, folder, [spec]);
    return { modules, seconds: (Date.now() - started) / 1000 };
  } catch (error) {
    return { failed: `npm install ${spec} failed: ${String(error).slice(0, 500)}` };
  }
}

function packageDir(spec: string): string {
  return spec.slice(0, spec.lastIndexOf("@"));
}

/** Bundles the suite as Vercel bundles an Edge Function: one script, no module loader. */
async function bundleForEdge(scratch: string): Promise<string> {
  const outfile = join(scratch, "conformance/edge.js");
  await build({
    entryPoints: [join(scratch, "conformance/entry-edge.mjs")],
    bundle: true,
    format: "iife",
    platform: "browser",
    conditions: ["edge-light"],
    target: "es2022",
    outfile,
    logLevel: "error",
    absWorkingDir: scratch,
  });
  return outfile;
}

/** Marks each row against what the runtime is expected to give. */
function judge(
  rows: SuiteRow[],
  lingered: boolean,
  expect: Expectation,
): RuntimeResult["features"] {
  const features: RuntimeResult["features"] = {};
  for (const row of rows) {
    const scoped = SCOPE_FEATURES.includes(row.feature);
    let status: Status = row.status === "ok" ? "ok" : "FAIL";
    let detail = row.detail;
    if (scoped && !expect.scopes) {
      const rightWords =
        row.status === "unavailable" &&
        (expect.scopeError?.test(row.detail) ?? true) &&
        !(expect.scopeErrorMustNot?.test(row.detail) ?? false);
      status = rightWords ? "expected failure" : "FAIL";
      if (row.status === "ok") detail = `expected LockScopeUnavailableError, but it ran: ${detail}`;
      else if (!rightWords) detail = `not the expected error: ${detail}`;
    }
    features[row.feature] = { status, detail };
  }
  features[EXITS] = lingered
    ? { status: "FAIL", detail: `still running ${EXIT_GRACE_MS / 1000} s after the suite ended` }
    : { status: "ok", detail: "exited by itself" };
  return features;
}

interface Step {
  readonly runtime: string;
  /** Its row's name in docs/runtimes.md, from the version the run reports. */
  label(version: string): string;
  /** The runtime package this step needs, if any. */
  readonly needs?: keyof typeof RUNTIME_PACKAGES;
  readonly expect: Expectation;
  run(context: StepContext): Promise<{ version: string; rows: SuiteRow[]; lingered: boolean }>;
}

interface StepContext {
  readonly scratch: string;
  readonly env: NodeJS.ProcessEnv;
  readonly server: Server;
  readonly prefix: string;
  /** The node_modules of the step's runtime package. */
  readonly modules: string;
}

const ALL_SCOPES: Expectation = { scopes: true };

/** "v22.23.3" → "Node 22.23". */
function nodeLabel(version: string): string {
  return `Node ${version.replace(/^v/, "").split(".").slice(0, 2).join(".")}`;
}

/** "deno 2.9.6 (stable, …)" → "Deno 2.9.6". */
function denoLabel(version: string): string {
  return `Deno ${/^deno (\S+)/.exec(version)?.[1] ?? version}`;
}

/** "workerd 1.20261102.1, …" → "workerd 1.20261102". */
function workerdLabel(version: string): string {
  return `workerd ${/^workerd (\d+\.\d+)/.exec(version)?.[1] ?? version}`;
}

function denoPermissions(server: Server): string[] {
  return [`--allow-net=127.0.0.1:${server.port}`, `--allow-env=${DENO_ENV_ALLOW.join(",")}`];
}

async function versionOf(binary: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const result = await run(binary, args, tmpdir(), env, 30_000);
  return result.output.trim().split("\n")[0] ?? "";
}

const STEPS: readonly Step[] = [
  {
    runtime: "Node 22",
    label: nodeLabel,
    expect: ALL_SCOPES,
    async run({ scratch, env, prefix }) {
      const hosted = rowsOf(
        await run(process.execPath, ["conformance/entry-node.mjs", prefix], scratch, env),
      );
      return { version: process.version, ...hosted };
    },
  },
  {
    runtime: "Node 24",
    label: nodeLabel,
    needs: "node24",
    expect: ALL_SCOPES,
    async run({ scratch, env, prefix, modules }) {
      const node = join(modules, packageDir(RUNTIME_PACKAGES.node24), "bin/node");
      const hosted = rowsOf(await run(node, ["conformance/entry-node.mjs", prefix], scratch, env));
      return { version: await versionOf(node, ["--version"], env), ...hosted };
    },
  },
  {
    runtime: "Bun",
    label: (version) => `Bun ${version.replace(/^bun /, "")}`,
    needs: "bun",
    expect: ALL_SCOPES,
    async run({ scratch, env, prefix, modules }) {
      const bun = join(modules, packageDir(RUNTIME_PACKAGES.bun), "bin/bun");
      const hosted = rowsOf(await run(bun, ["conformance/entry-node.mjs", prefix], scratch, env));
      return { version: `bun ${await versionOf(bun, ["--version"], env)}`, ...hosted };
    },
  },
  {
    runtime: "Deno (node_modules)",
    label: (version) => `${denoLabel(version)}, node_modules`,
    needs: "deno",
    expect: ALL_SCOPES,
    async run({ scratch, env, server, prefix, modules }) {
      const deno = join(modules, packageDir(RUNTIME_PACKAGES.deno), "deno");
      const hosted = rowsOf(
        await run(
          deno,
          ["run", ...denoPermissions(server), "conformance/entry-node.mjs", prefix],
          scratch,
          env,
        ),
      );
      return { version: await versionOf(deno, ["--version"], env), ...hosted };
    },
  },
  {
    runtime: "Deno (npm: specifiers)",
    label: (version) => `${denoLabel(version)}, \`npm:\` specifiers`,
    needs: "deno",
    expect: ALL_SCOPES,
    async run({ scratch, env, server, prefix, modules }) {
      const deno = join(modules, packageDir(RUNTIME_PACKAGES.deno), "deno");
      // A Deno project without package.json or node_modules: hono and @upstash/redis are npm:
      // specifiers Deno fetches itself; edgelock is the packed package's files.
      const dir = join(scratch, "deno-npm");
      mkdirSync(dir);
      cpSync(join(scratch, "node_modules/edgelock"), join(dir, "vendor/edgelock"), {
        recursive: true,
      });
      cpSync(join(scratch, "conformance"), join(dir, "conformance"), { recursive: true });
      const versions = Object.fromEntries(
        USER_DEPENDENCIES.map((name) => [name, installedVersion(scratch, name)]),
      );
      const edgelockEntry = (entry: string) => `./vendor/edgelock/dist/src/${entry}`;
      writeFileSync(
        join(dir, "deno.json"),
        JSON.stringify(
          {
            nodeModulesDir: "none",
            imports: {
              edgelock: edgelockEntry("index.js"),
              "edgelock/hono": edgelockEntry("hono/index.js"),
              "edgelock/inspector": edgelockEntry("inspector/index.js"),
              hono: `npm:hono@${versions.hono}`,
              "hono/": `npm:/hono@${versions.hono}/`,
              "@upstash/redis": `npm:@upstash/redis@${versions["@upstash/redis"]}`,
              "@upstash/redis/": `npm:/@upstash/redis@${versions["@upstash/redis"]}/`,
            },
          },
          null,
          2,
        ),
      );
      const hosted = rowsOf(
        await run(
          deno,
          ["run", ...denoPermissions(server), "conformance/entry-node.mjs", prefix],
          dir,
          { ...env, DENO_DIR: join(scratch, ".deno-cache") },
        ),
      );
      return { version: await versionOf(deno, ["--version"], env), ...hosted };
    },
  },
  {
    runtime: "Vercel Edge runtime (edge-runtime VM)",
    label: (version) => `Vercel Edge (${version} VM)`,
    needs: "edgeRuntime",
    expect: {
      scopes: false,
      scopeError: /Vercel's Edge runtime has it in "node:async_hooks"/,
      scopeErrorMustNot: /nodejs_compat/,
    },
    run: (context) => runInEdgeRuntime(context, []),
  },
  {
    runtime: "Vercel Edge runtime + AsyncLocalStorage global",
    label: () => "Vercel Edge + global AsyncLocalStorage",
    needs: "edgeRuntime",
    expect: ALL_SCOPES,
    run: (context) => runInEdgeRuntime(context, ["--async-hooks"]),
  },
  {
    runtime: "workerd + nodejs_compat",
    label: (version) => `${workerdLabel(version)} + \`nodejs_compat\``,
    expect: ALL_SCOPES,
    run: (context) => runInWorkerd(context, compatibilityDate(), "nodejs_compat"),
  },
  {
    runtime: `workerd without nodejs_compat (${WITHOUT_ALS_DATE})`,
    label: () => `workerd, no flag, ${WITHOUT_ALS_DATE}`,
    expect: {
      scopes: false,
      scopeError: /compatibility_flags = \["nodejs_compat"\]/,
      scopeErrorMustNot: /Vercel/,
    },
    run: (context) => runInWorkerd(context, WITHOUT_ALS_DATE, ""),
  },
];

async function runInEdgeRuntime(context: StepContext, flags: string[]) {
  const { scratch, env, server, prefix, modules } = context;
  const script = await bundleForEdge(scratch);
  const module = join(modules, "edge-runtime/dist/index.js");
  const hosted = rowsOf(
    await run(
      process.execPath,
      ["conformance/host-edge.mjs", module, script, server.url, server.token, prefix, ...flags],
      scratch,
      env,
    ),
  );
  return {
    version: `edge-runtime ${installedVersion(join(modules, ".."), "edge-runtime")}`,
    ...hosted,
  };
}

async function runInWorkerd(context: StepContext, date: string, flags: string) {
  const { scratch, env, server, prefix } = context;
  const wrangler = join(scratch, "node_modules/wrangler/wrangler-dist/cli.js");
  const hosted = rowsOf(
    await run(
      process.execPath,
      ["conformance/host-workerd.mjs", wrangler, server.url, server.token, prefix, date, flags],
      scratch,
      env,
    ),
  );
  const workerd = installedVersion(REPO_ROOT, "workerd");
  return { version: `workerd ${workerd}, ${date}${flags ? `, ${flags}` : ""}`, ...hosted };
}

function installedVersion(projectDir: string, name: string): string {
  const manifest = JSON.parse(
    readFileSync(join(projectDir, "node_modules", name, "package.json"), "utf8"),
  ) as { version: string };
  return manifest.version;
}

function compatibilityDate(): string {
  const date = /compatibility_date\s*=\s*"([^"]+)"/.exec(
    readFileSync(join(REPO_ROOT, "wrangler.toml"), "utf8"),
  );
  if (!date?.[1]) throw new Error("wrangler.toml has no compatibility_date");
  return date[1];
}

/** The environment of a user's shell: no Redis of the repository's, no npm variables. */
function userEnvironment(server?: Server): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
  if (server) {
    env.UPSTASH_REDIS_REST_URL = server.url;
    env.UPSTASH_REDIS_REST_TOKEN = server.token;
  }
  for (const name of ["REDIS_URL", "EDGELOCK_DEV_TOKEN", "NODE_OPTIONS"]) delete env[name];
  for (const name of Object.keys(env)) if (name.startsWith("npm_")) delete env[name];
  return env;
}

/** The table as text: one line per runtime, one column per feature. */
export function renderTable(
  results: readonly RuntimeResult[],
  features: readonly string[],
): string {
  const mark = (status: Status | undefined) =>
    status === "ok" ? "ok" : status === "expected failure" ? "expected" : status ? "FAIL" : "-";
  const header = ["runtime", ...features];
  const lines = results.map((result) =>
    result.skipped
      ? [result.runtime, `skipped: ${result.skipped}`]
      : result.error
        ? [result.runtime, `FAIL: ${result.error.split("\n")[0]}`]
        : [result.runtime, ...features.map((feature) => mark(result.features[feature]?.status))],
  );
  const rule = header.map(() => "---");
  return [header, rule, ...lines].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

/** docs/runtimes.md's column for each feature (the suite's names, shortened). */
const DOCS_COLUMNS: Readonly<Record<string, string>> = {
  "contended lock": "contended",
  "push waiting": "push",
  "client.scope()": "`scope()`",
  "Hono withLock()": "`withLock()`",
  "idempotency()": "`idempotency()`",
  "concurrencyLimit()": "`concurrencyLimit()`",
  "inspector handler": "inspector",
  [EXITS]: "exits",
};

const DOCS_FILE = join(REPO_ROOT, "docs/runtimes.md");
const RESULTS_FILE = join(HERE, "results.json");
const TABLE_START = "<!-- conformance-table:start -->\n";
const TABLE_END = "<!-- conformance-table:end -->";

/** The table of docs/runtimes.md: one row per runtime by its label, a column per feature. */
function renderDocsTable(results: readonly RuntimeResult[], features: readonly string[]): string {
  const mark = (status: Status | undefined) =>
    status === "ok" ? "ok" : status === "expected failure" ? "expected" : "FAIL";
  const header = ["runtime", ...features.map((feature) => DOCS_COLUMNS[feature] ?? feature)];
  const rows = results.map((result) => [
    result.label,
    ...features.map((feature) => mark(result.features[feature]?.status)),
  ]);
  return [header, header.map(() => "---"), ...rows]
    .map((cells) => `| ${cells.join(" | ")} |`)
    .join("\n");
}

/**
 * Compares docs/runtimes.md's table with this full run's, or (`update`) writes it there and the
 * run to results.json. Returns why the docs are stale, or undefined.
 */
function syncDocs(
  results: readonly RuntimeResult[],
  features: readonly string[],
  update: boolean,
): string | undefined {
  const docs = readFileSync(DOCS_FILE, "utf8");
  const start = docs.indexOf(TABLE_START);
  const end = docs.indexOf(TABLE_END, start);
  if (start === -1 || end === -1) return "docs/runtimes.md lost its conformance-table markers";
  const table = `${renderDocsTable(results, features)}\n`;
  if (update) {
    writeFileSync(DOCS_FILE, docs.slice(0, start + TABLE_START.length) + table + docs.slice(end));
    writeFileSync(RESULTS_FILE, `${JSON.stringify({ features, results }, null, 2)}\n`);
    console.log("docs/runtimes.md's table and scripts/conformance/results.json written");
    return undefined;
  }
  if (docs.slice(start + TABLE_START.length, end) === table) return undefined;
  return `docs/runtimes.md's table is not this run's (run with --write to write it):\n${table}`;
}

async function main(): Promise<number> {
  const jsonAt = process.argv.indexOf("--json");
  const jsonFile =
    jsonAt === -1 ? join(tmpdir(), "edgelock-conformance.json") : (process.argv[jsonAt + 1] ?? "");
  const onlyAt = process.argv.indexOf("--only");
  const only = onlyAt === -1 ? undefined : process.argv[onlyAt + 1];
  const keep = process.argv.includes("--keep");
  const writeDocs = process.argv.includes("--write");
  const inCi = process.env.CI === "true";
  const scratch = mkdtempSync(join(tmpdir(), "edgelock-conformance-"));
  const results: RuntimeResult[] = [];
  let server: Server | undefined;
  try {
    const packedAt = Date.now();
    const tarball = packTarball(scratch);
    writeFileSync(
      join(scratch, "package.json"),
      `${JSON.stringify({ name: "edgelock-conformance", private: true, type: "module" }, null, 2)}\n`,
    );
    npmInstall(scratch, [
      tarball,
      ...USER_DEPENDENCIES.map((name) => `${name}@${installedVersion(REPO_ROOT, name)}`),
    ]);
    // The user's dev tool for workerd, linked from this repository (as check:installed does).
    symlinkSync(
      join(REPO_ROOT, "node_modules/wrangler"),
      join(scratch, "node_modules/wrangler"),
      "dir",
    );
    mkdirSync(join(scratch, "conformance"));
    for (const file of SUITE_FILES) cpSync(join(HERE, file), join(scratch, "conformance", file));
    console.log(
      `packed and installed into ${scratch} (${((Date.now() - packedAt) / 1000).toFixed(1)} s)`,
    );
    server = await startDevServer(scratch, userEnvironment());
    console.log(`edgelock dev (embedded, upstash profile) at ${server.url}`);
    const env = userEnvironment(server);
    const installs = new Map<string, ReturnType<typeof installRuntime>>();
    for (const step of STEPS.filter((s) => only === undefined || s.runtime.includes(only))) {
      const started = Date.now();
      let modules = "";
      if (step.needs) {
        const spec = RUNTIME_PACKAGES[step.needs];
        if (!installs.has(spec)) {
          const installed = installRuntime(scratch, spec);
          if ("seconds" in installed)
            console.log(`  installed ${spec} in ${installed.seconds.toFixed(1)} s`);
          installs.set(spec, installed);
        }
        const installed = installs.get(spec);
        if (!installed || "failed" in installed) {
          const why = installed && "failed" in installed ? installed.failed : "not installed";
          results.push({
            runtime: step.runtime,
            label: step.runtime,
            version: "",
            seconds: 0,
            skipped: why,
            features: {},
          });
          console.log(`${inCi ? "FAIL" : "skip"} ${step.runtime}: ${why}`);
          continue;
        }
        modules = installed.modules;
      }
      const prefix = `conformance-${results.length}`;
      try {
        const { version, rows, lingered } = await withTimeout(
          step.run({ scratch, env, server, prefix, modules }),
          STEP_TIMEOUT_MS + INSTALL_TIMEOUT_MS,
          step.runtime,
        );
        const features = judge(rows, lingered, step.expect);
        const seconds = (Date.now() - started) / 1000;
        results.push({
          runtime: step.runtime,
          label: step.label(version),
          version,
          seconds,
          features,
        });
        const failed = Object.entries(features).filter(([, row]) => row.status === "FAIL");
        console.log(
          `${failed.length === 0 ? "ok  " : "FAIL"} ${step.runtime} (${version}, ${seconds.toFixed(1)} s)`,
        );
        for (const [feature, row] of Object.entries(features)) {
          if (row.status !== "ok") console.log(`       ${row.status}: ${feature}: ${row.detail}`);
        }
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        results.push({
          runtime: step.runtime,
          label: step.runtime,
          version: "",
          seconds: (Date.now() - started) / 1000,
          error: message,
          features: {},
        });
        console.log(`FAIL ${step.runtime}\n${message}`);
      }
    }
  } finally {
    if (server) {
      server.child.kill("SIGINT");
    }
    if (keep) console.log(`scratch project kept: ${scratch}`);
    else rmSync(scratch, { recursive: true, force: true });
  }
  const features = [...new Set(results.flatMap((result) => Object.keys(result.features)))];
  console.log(`\n${renderTable(results, features)}\n`);
  writeFileSync(jsonFile, `${JSON.stringify({ features, results }, null, 2)}\n`);
  console.log(`written to ${jsonFile}`);
  const failures = results.filter(
    (result) =>
      result.error !== undefined ||
      (result.skipped !== undefined && inCi) ||
      Object.values(result.features).some((row) => row.status === "FAIL"),
  );
  // Only a full run that passed speaks for the docs (a skipped runtime is no row of theirs).
  const complete = only === undefined && failures.length === 0 && !results.some((r) => r.skipped);
  const staleDocs = complete ? syncDocs(results, features, writeDocs) : undefined;
  if (staleDocs !== undefined) console.log(`FAIL ${staleDocs}`);
  else if (!complete && writeDocs) console.log("docs not written: not a full run that passed");
  console.log(
    failures.length === 0
      ? `every runtime conforms (${results.filter((r) => !r.skipped).length} run, ${results.filter((r) => r.skipped).length} skipped)${staleDocs === undefined ? "" : ", but docs/runtimes.md's table is stale"}`
      : `${failures.length} runtime(s) failed: ${failures.map((r) => r.runtime).join(", ")}`,
  );
  return failures.length === 0 && staleDocs === undefined ? 0 : 1;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer after ${ms / 1000} s`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

if (import.meta.filename === process.argv[1]) process.exitCode = await main();

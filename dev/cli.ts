/**
 * The `edgelock` command line. `edgelock dev` runs the local Upstash-compatible REST server and
 * prints the environment variables to point `@upstash/redis` at it.
 */
import { readFileSync, realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { previousDevToken, writeDevVars } from "./dev-vars.js";
import { type BackendChoice, type DevServer, startDevServer } from "./index.js";
import { INSPECT_HELP, InspectUsageError, runInspect } from "./inspect/command.js";
import {
  type BlockingMode,
  isBlockingMode,
  isServerProfile,
  PROFILE_ENV,
  resolveProfile,
  type ServerProfile,
} from "./profile/settings.js";
import { LoggingStats, summarizeStats } from "./request-log.js";
import type { FaultOptions } from "./rest/faults.js";

export const HELP = `edgelock — distributed locks over Upstash Redis REST

Usage:
  edgelock dev [options]   run a local Upstash-compatible REST server (inspector page at
                           <url>/_edgelock/)
  edgelock dev --help      show the options of "dev"
  edgelock inspect         see the locks in a database: a local page, --json or --table
  edgelock inspect waits --url INSPECTOR_URL
                           the recent waits a running inspector shows, step by step
  edgelock inspect --help  show the options of "inspect"
  edgelock --version       print the version
  edgelock --help          show this help
`;

export const DEV_HELP = `edgelock dev — a local Upstash-compatible REST server for @upstash/redis

Usage: edgelock dev [options]

Options:
  --port N            port to listen on (default 8079; 0 = any free port)
  --host H            interface to listen on (default 127.0.0.1)
  --token T           bearer token clients must send (default: $EDGELOCK_DEV_TOKEN if set,
                      else the one an earlier start wrote into --dev-vars FILE, else random)
  --read-only-token T a token that may only read, as Upstash's (default: random, printed)
  --profile P         upstash | redis: behave like production Upstash (blocking commands
                      answer at once, allow-key-locking enforced, Upstash's limits) or like a
                      Redis behind a REST proxy (default: $${PROFILE_ENV} if set, else upstash)
  --blocking M        under --profile upstash: immediate (answer as if timed out at once,
                      the default) | error (refuse them with Upstash's error)
  --dev-vars FILE     write UPSTASH_REDIS_REST_URL and _TOKEN into FILE (e.g. .dev.vars, which
                      wrangler dev reads), keeping its other lines; a restart serves the token
                      already there, so a running wrangler dev keeps working
  --verbose           log every request's commands and every error response
  --backend B         auto | redis-server | embedded (default auto: REDIS_URL if set,
                      else a spawned redis-server if installed, else embedded)
  --redis-url URL     use this Redis: redis://[user:password@]host:port[/db]
  --replica-lag-ms N  replica mode, as an Upstash global database seen from a read region:
                      writes and EVAL run on a primary, reads (GET, SCAN, EVAL_RO…) on a
                      replica N ms behind unless the request's upstash-sync-token asks for
                      newer (needs --backend redis-server or embedded; auto ignores REDIS_URL)
  --latency MS        add this much delay to every response (default 0)
  --jitter MS         vary the delay uniformly by ± this much (default 0)
  --drop RATE         0..1: run the request, then drop the response (default 0)
  --fail RATE         0..1: answer 503 without running the request (default 0)
  --seed N            seed for the fault generator (default: random, printed)
  -h, --help          show this help

The inspector page is served at <url>/_edgelock/ when the server listens on loopback.
On exit (Ctrl-C) it prints what it served: requests, commands, billed commands (what Upstash
bills: each command plus every redis.call its scripts ran) and bytes, and the scripts that
would run under Upstash's global lock. GET /_edgelock/stats serves the same counters as JSON,
to a request with the token (Authorization: Bearer <token>, as every REST route):
  curl -H "Authorization: Bearer $UPSTASH_REDIS_REST_TOKEN" <url>/_edgelock/stats
`;

/** Parsed `dev` options, ready for startDevServer. */
export interface DevCommand {
  readonly port: number;
  readonly host: string;
  readonly token: string | undefined;
  readonly readOnlyToken: string | undefined;
  readonly profile: ServerProfile;
  readonly blocking: BlockingMode;
  readonly backend: BackendChoice;
  readonly faults: FaultOptions;
  /** File to write the connection variables into, for wrangler. */
  readonly devVars: string | undefined;
  readonly verbose: boolean;
  /** Replica mode's lag (`--replica-lag-ms`), or undefined without a replica. */
  readonly replicaLagMs: number | undefined;
}

export class UsageError extends Error {
  override readonly name = "UsageError";
}

function numberOption(name: string, text: string | undefined, min: number, max: number) {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || value < min || value > max) {
    throw new UsageError(`--${name} must be a number between ${min} and ${max}`);
  }
  return value;
}

const DEV_OPTIONS = {
  port: { type: "string" },
  host: { type: "string" },
  token: { type: "string" },
  "read-only-token": { type: "string" },
  profile: { type: "string" },
  blocking: { type: "string" },
  backend: { type: "string" },
  "redis-url": { type: "string" },
  latency: { type: "string" },
  jitter: { type: "string" },
  drop: { type: "string" },
  fail: { type: "string" },
  seed: { type: "string" },
  "dev-vars": { type: "string" },
  verbose: { type: "boolean" },
  "replica-lag-ms": { type: "string" },
} as const;

function parseDevOptions(args: readonly string[]) {
  try {
    return parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: DEV_OPTIONS,
    }).values;
  } catch (error) {
    // parseArgs throws TypeErrors with ERR_PARSE_ARGS_* codes; they are usage mistakes.
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/**
 * Parses the arguments after `dev`. Throws UsageError on bad input. `env` supplies
 * EDGELOCK_DEV_TOKEN, the token when `--token` is not given, and EDGELOCK_DEV_PROFILE.
 */
export function parseDevArgs(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): DevCommand {
  const values = parseDevOptions(args);
  const backendName = values.backend ?? "auto";
  if (!["auto", "redis-server", "embedded"].includes(backendName)) {
    throw new UsageError("--backend must be auto, redis-server or embedded");
  }
  const redisUrl = values["redis-url"];
  if (redisUrl !== undefined && values.backend !== undefined && backendName !== "auto") {
    throw new UsageError("use either --redis-url or --backend, not both");
  }
  const port = numberOption("port", values.port, 0, 65535) ?? 8079;
  if (!Number.isInteger(port)) throw new UsageError("--port must be an integer");
  const seed = numberOption("seed", values.seed, 0, 2 ** 32 - 1);
  if (seed !== undefined && !Number.isInteger(seed))
    throw new UsageError("--seed must be an integer");
  const token = values.token ?? (env.EDGELOCK_DEV_TOKEN || undefined);
  if (token !== undefined && (token === "" || /\s/.test(token))) {
    throw new UsageError(
      `${values.token === undefined ? "EDGELOCK_DEV_TOKEN" : "--token"} must be non-empty, without spaces`,
    );
  }
  if (values["dev-vars"] === "") throw new UsageError("--dev-vars needs a file name");
  const readOnlyToken = values["read-only-token"];
  if (readOnlyToken !== undefined && (readOnlyToken === "" || /\s/.test(readOnlyToken))) {
    throw new UsageError("--read-only-token must be non-empty, without spaces");
  }
  if (values.profile !== undefined && !isServerProfile(values.profile)) {
    throw new UsageError("--profile must be upstash or redis");
  }
  let profile: ServerProfile;
  try {
    profile = resolveProfile(values.profile, env);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const blocking = values.blocking ?? "immediate";
  if (!isBlockingMode(blocking)) throw new UsageError("--blocking must be immediate or error");
  if (values.blocking !== undefined && profile !== "upstash") {
    throw new UsageError("--blocking applies to --profile upstash only");
  }

  const faults: {
    -readonly [K in keyof FaultOptions]: FaultOptions[K];
  } = {};
  const latencyMs = numberOption("latency", values.latency, 0, 600_000);
  const jitterMs = numberOption("jitter", values.jitter, 0, 600_000);
  const dropAfterExecute = numberOption("drop", values.drop, 0, 1);
  const failBeforeExecute = numberOption("fail", values.fail, 0, 1);
  if (latencyMs !== undefined) faults.latencyMs = latencyMs;
  if (jitterMs !== undefined) faults.jitterMs = jitterMs;
  if (dropAfterExecute !== undefined) faults.dropAfterExecute = dropAfterExecute;
  if (failBeforeExecute !== undefined) faults.failBeforeExecute = failBeforeExecute;
  if (seed !== undefined) faults.seed = seed;
  const replicaLagMs = numberOption("replica-lag-ms", values["replica-lag-ms"], 0, 600_000);
  if (replicaLagMs !== undefined && redisUrl !== undefined) {
    throw new UsageError("--replica-lag-ms starts its own primary and replica: drop --redis-url");
  }

  return {
    port,
    host: values.host ?? "127.0.0.1",
    token,
    readOnlyToken,
    profile,
    blocking,
    backend: redisUrl !== undefined ? { url: redisUrl } : (backendName as BackendChoice),
    faults,
    devVars: values["dev-vars"],
    verbose: values.verbose ?? false,
    replicaLagMs,
  };
}

function describeFaults(server: DevServer): string | undefined {
  const f = server.faults.options;
  if (!server.faults.active) return undefined;
  const parts: string[] = [];
  if (f.latencyMs > 0 || f.jitterMs > 0) parts.push(`latency ${f.latencyMs} ms ± ${f.jitterMs} ms`);
  if (f.dropAfterExecute > 0) parts.push(`drop after execute ${f.dropAfterExecute}`);
  if (f.failBeforeExecute > 0) parts.push(`fail before execute ${f.failBeforeExecute}`);
  parts.push(`seed ${f.seed}`);
  return parts.join(", ");
}

export interface CliIo {
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  /** Environment variables (EDGELOCK_DEV_TOKEN). Default: none. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Resolves when the process should stop (default: SIGINT or SIGTERM). */
  readonly stopSignal?: Promise<unknown>;
  /** Called once the server is listening (tests use it). */
  readonly onReady?: (server: DevServer) => void;
  /** Called with the page's URL once `edgelock inspect` serves it (tests use it). */
  readonly onInspectorReady?: (pageUrl: string) => void;
}

function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const handler = (signal: NodeJS.Signals) => {
      process.off("SIGINT", handler);
      process.off("SIGTERM", handler);
      resolve(signal);
    };
    process.on("SIGINT", handler);
    process.on("SIGTERM", handler);
  });
}

/** The version in the package.json next to this file's package (source or dist layout). */
export function packageVersion(): string {
  for (const relative of ["../package.json", "../../package.json"]) {
    try {
      const manifest: unknown = JSON.parse(
        readFileSync(new URL(relative, import.meta.url), "utf8"),
      );
      if (
        typeof manifest === "object" &&
        manifest !== null &&
        "name" in manifest &&
        manifest.name === "edgelock" &&
        "version" in manifest &&
        typeof manifest.version === "string"
      ) {
        return manifest.version;
      }
    } catch {
      // Not in this layout; try the next.
    }
  }
  return "unknown";
}

function isAddressInUse(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "EADDRINUSE";
}

async function startForCli(command: DevCommand, io: CliIo): Promise<DevServer> {
  try {
    return await startDevServer({
      port: command.port,
      host: command.host,
      ...(command.token === undefined ? {} : { token: command.token }),
      ...(command.readOnlyToken === undefined ? {} : { readOnlyToken: command.readOnlyToken }),
      profile: command.profile,
      blocking: command.blocking,
      backend: command.backend,
      faults: command.faults,
      ...(command.replicaLagMs === undefined ? {} : { replica: { lagMs: command.replicaLagMs } }),
      ...(command.verbose ? { stats: new LoggingStats(io.err) } : {}),
      log: (line) => {
        if (!line.startsWith("backend:") && !line.startsWith("listening on")) io.err(line);
      },
    });
  } catch (error) {
    if (!isAddressInUse(error)) throw error;
    throw new UsageError(
      `port ${command.port} on ${command.host} is already in use: pick another with --port N, ` +
        "or --port 0 for any free port",
    );
  }
}

/**
 * The token to serve: `--token` or EDGELOCK_DEV_TOKEN, else the one an earlier start wrote into
 * the --dev-vars file (wrangler dev reads that file once, at its own start, so a new random
 * token on each restart would lock a running wrangler dev out), else a random one.
 */
async function tokenFor(command: DevCommand): Promise<string | undefined> {
  if (command.token !== undefined || command.devVars === undefined) return command.token;
  return previousDevToken(command.devVars);
}

async function runDev(args: readonly string[], io: CliIo): Promise<number> {
  const parsed = parseDevArgs(args, io.env);
  const token = await tokenFor(parsed);
  const command: DevCommand = { ...parsed, token };
  // Listen for signals before starting, so Ctrl-C during startup still shuts down cleanly.
  const stop = io.stopSignal ?? waitForSignal();
  const server = await startForCli(command, io);
  try {
    io.out(`edgelock dev server listening on ${server.url}`);
    io.out(`backend: ${server.backendKind} — ${server.backendDescription}`);
    io.out(
      `profile: ${server.profile}${server.profile === "upstash" ? ` (blocking commands: ${server.blocking})` : ""}`,
    );
    const faults = describeFaults(server);
    if (faults !== undefined) io.out(`faults: ${faults}`);
    io.out("");
    io.out("Point @upstash/redis at it with:");
    io.out(`UPSTASH_REDIS_REST_URL=${server.url}`);
    io.out(`UPSTASH_REDIS_REST_TOKEN=${server.token}`);
    io.out(`(read-only token: ${server.readOnlyToken})`);
    if (server.inspectorUrl !== undefined) io.out(`inspector: ${server.inspectorUrl}`);
    if (command.devVars !== undefined) {
      await writeDevVars(command.devVars, {
        UPSTASH_REDIS_REST_URL: server.url,
        UPSTASH_REDIS_REST_TOKEN: server.token,
      });
      io.out(`(written to ${command.devVars})`);
    }
    io.onReady?.(server);
    await stop;
    io.out("stopping…");
    io.out(summarizeStats(server.stats.snapshot()));
  } finally {
    await server.close();
  }
  return 0;
}

/** Runs the CLI with the given arguments (without `node` and the script); returns the exit code. */
export async function main(
  argv: readonly string[],
  io: CliIo = {
    out: (line) => console.log(line),
    err: (line) => console.error(line),
    env: process.env,
  },
): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === "--help" || command === "-h" || command === "help") {
      io.out(HELP);
      return command === undefined ? 1 : 0;
    }
    if (command === "--version" || command === "-v" || command === "version") {
      io.out(packageVersion());
      return 0;
    }
    if (command === "dev") {
      if (rest.includes("--help") || rest.includes("-h")) {
        io.out(DEV_HELP);
        return 0;
      }
      return await runDev(rest, io);
    }
    if (command === "inspect") {
      if (rest.includes("--help") || rest.includes("-h")) {
        io.out(INSPECT_HELP);
        return 0;
      }
      return await runInspect(rest, {
        out: io.out,
        err: io.err,
        ...(io.env === undefined ? {} : { env: io.env }),
        ...(io.stopSignal === undefined ? {} : { stopSignal: io.stopSignal }),
        ...(io.onInspectorReady === undefined ? {} : { onReady: io.onInspectorReady }),
      });
    }
    throw new UsageError(`unknown command "${command}"`);
  } catch (error) {
    const isUsage =
      error instanceof UsageError ||
      error instanceof InspectUsageError ||
      (error instanceof Error &&
        "code" in error &&
        String(error.code).startsWith("ERR_PARSE_ARGS"));
    io.err(`edgelock: ${error instanceof Error ? error.message : String(error)}`);
    const sub = command === "dev" || command === "inspect" ? `${command} ` : "";
    if (isUsage) io.err(`run "edgelock ${sub}--help" for usage`);
    return isUsage ? 2 : 1;
  }
}

function isDirectRun(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isDirectRun()) {
  process.exitCode = await main(process.argv.slice(2));
}

/**
 * Spawns a throwaway `redis-server` on a free loopback port, without persistence, for local
 * development and tests. The process is stopped by `close()`, and also when this process exits or
 * receives SIGINT/SIGTERM, so no stray servers are left behind.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync, statSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { RespConnection } from "./resp/connection.js";
import { parseRedisUrl } from "./resp/redis-url.js";

export interface RedisServerHandle {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Version reported by the server's INFO, e.g. `7.0.15`. */
  readonly version: string;
  /** Stops the server and removes its scratch directory. Idempotent. */
  close(): Promise<void>;
}

export interface StartRedisServerOptions {
  /** Path of the binary. Default: `findRedisServerBinary()`. */
  readonly binary?: string;
  /** Fail if the server does not answer PING within this time. Default 10000 ms. */
  readonly startTimeoutMs?: number;
  /** Extra command-line arguments, e.g. `["--requirepass", "secret"]`. Default none. */
  readonly extraArgs?: readonly string[];
  /** Password to use for the readiness check when `extraArgs` sets `--requirepass`. Default none. */
  readonly password?: string;
}

/** `REDIS_SERVER_BIN` if set, else the first executable `redis-server` on PATH, else undefined. */
export function findRedisServerBinary(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const explicit = env.REDIS_SERVER_BIN;
  if (explicit !== undefined && explicit !== "") {
    return isExecutableFile(explicit) ? explicit : undefined;
  }
  const names = process.platform === "win32" ? ["redis-server.exe"] : ["redis-server"];
  for (const directory of (env.PATH ?? "").split(path.delimiter)) {
    if (directory === "") continue;
    for (const name of names) {
      const candidate = path.join(directory, name);
      if (isExecutableFile(candidate)) return candidate;
    }
  }
  return undefined;
}

function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

const PORT_ATTEMPTS = 5;

/** Starts a redis-server and resolves once it answers PING. */
export async function startRedisServer(
  options: StartRedisServerOptions = {},
): Promise<RedisServerHandle> {
  const binary = options.binary ?? findRedisServerBinary();
  if (binary === undefined) {
    throw new Error("redis-server not found: install Redis or set REDIS_SERVER_BIN");
  }
  let lastError: unknown;
  // Another process may grab the port between probing and binding; try a few free ports.
  for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
    try {
      return await startOnPort(binary, await findFreePort(), options);
    } catch (error) {
      lastError = error;
      if (!(error instanceof PortInUseError)) throw error;
    }
  }
  throw lastError;
}

class PortInUseError extends Error {}

async function startOnPort(
  binary: string,
  port: number,
  options: StartRedisServerOptions,
): Promise<RedisServerHandle> {
  const scratch = mkdtempSync(path.join(tmpdir(), "edgelock-redis-"));
  const args = [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    "--daemonize",
    "no",
    "--dir",
    scratch,
    "--loglevel",
    "warning",
    ...(options.extraArgs ?? []),
  ];
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  trackChild(child);
  let output = "";
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString("utf8")).slice(-4000);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);

  const exited = new Promise<never>((_, reject) => {
    child.once("error", (error) => reject(new Error(`cannot run ${binary}: ${error.message}`)));
    child.once("exit", (code, signal) => {
      const detail = output.trim().split("\n").slice(-5).join("\n");
      const reason = `redis-server exited early (${signal ?? `code ${code}`})${detail ? `:\n${detail}` : ""}`;
      reject(
        /address already in use/i.test(output) ? new PortInUseError(reason) : new Error(reason),
      );
    });
  });
  exited.catch(() => undefined);

  const url = `redis://127.0.0.1:${port}`;
  const stop = once(async () => {
    await stopChild(child);
    rmSync(scratch, { recursive: true, force: true });
  });
  try {
    const passwordPart =
      options.password === undefined ? "" : `:${encodeURIComponent(options.password)}@`;
    const settings = parseRedisUrl(`redis://${passwordPart}127.0.0.1:${port}`);
    const version = await Promise.race([
      waitUntilReady(settings, options.startTimeoutMs ?? 10_000),
      exited,
    ]);
    return { url, port, version, close: stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Polls PING until the server answers, then reads its version. */
async function waitUntilReady(
  settings: ReturnType<typeof parseRedisUrl>,
  timeoutMs: number,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const connection = await RespConnection.connect(settings, { connectTimeoutMs: 1000 });
      try {
        const [pong, info] = await connection.send([["PING"], ["INFO", "server"]]);
        if (pong?.type === "status" && pong.value === "PONG") {
          const text =
            info?.type === "bulk" && info.value !== null
              ? Buffer.from(info.value).toString("utf8")
              : "";
          return /redis_version:([^\r\n]+)/.exec(text)?.[1] ?? "unknown";
        }
        // LOADING or similar: not ready yet.
      } finally {
        await connection.close();
      }
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline)
      throw new Error(`redis-server did not answer PING within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      probe.close(() => (port > 0 ? resolve(port) : reject(new Error("no free port"))));
    });
  });
}

function once(action: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= action();
    return running;
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    untrackChild(child);
    return;
  }
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const killTimer = setTimeout(() => child.kill("SIGKILL"), 3000);
  await exited;
  clearTimeout(killTimer);
  untrackChild(child);
}

// --- cleanup on exit -------------------------------------------------------------------------

const liveChildren = new Set<ChildProcess>();
const SIGNALS = ["SIGINT", "SIGTERM"] as const;

function killAllChildren(): void {
  for (const child of liveChildren) child.kill("SIGKILL");
  liveChildren.clear();
}

/**
 * On SIGINT/SIGTERM: if the application listens for the signal too, it owns the shutdown (and
 * will close the server; the exit hook is the safety net). Otherwise stop the servers and
 * re-raise the signal so the default behaviour (terminate) still happens.
 */
function onSignal(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) > 1) return;
  killAllChildren();
  removeHandlers();
  process.kill(process.pid, signal);
}

function trackChild(child: ChildProcess): void {
  if (liveChildren.size === 0) {
    process.on("exit", killAllChildren);
    for (const signal of SIGNALS) {
      // First in line, so it sees the application's own listeners before they remove themselves.
      process.prependListener(signal, onSignal);
    }
  }
  liveChildren.add(child);
  child.once("exit", () => untrackChild(child));
}

function untrackChild(child: ChildProcess): void {
  if (!liveChildren.delete(child)) return;
  if (liveChildren.size === 0) removeHandlers();
}

function removeHandlers(): void {
  process.off("exit", killAllChildren);
  for (const signal of SIGNALS) process.off(signal, onSignal);
}

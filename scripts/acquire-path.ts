/**
 * How many files of `src` one waited `lock.acquire()` runs through (issue 45: "a path is long").
 * V8's precise coverage follows the calls: after a warm-up acquisition (module loading counts
 * nothing), the counters are reset, one acquisition waits for a lock held by another client, and
 * every `src` file with a function that ran is on its path. The holder lives in a worker thread
 * (another V8 isolate, not covered here) and its lease ends on its own, so nothing but the waiter
 * runs edgelock code in this isolate meanwhile (the dev server lives in `dev/`).
 *
 * Usage: npx tsx scripts/acquire-path.ts [--list]   (npm run check:path; part of npm test)
 * Fails when a path grows past its limit; lower a limit when a change makes a path shorter.
 */
import { Session } from "node:inspector/promises";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { Redis } from "@upstash/redis";
import { startDevServer } from "../dev/index.js";
import { LockClient, type WaitOptions } from "../src/index.js";
import { STREAM_LINGER_MS } from "../src/wait/push/client-state.js";
import { REPO_ROOT } from "./packed-project.js";

/**
 * Files per path, at most: the counts of 2026-11-29. Issue 45's targets are 12 (poll) and 16
 * (push); a limit may only come down.
 */
const LIMITS: Readonly<Record<string, number>> = {
  "lock.acquire(), poll": 12,
  "lock.acquire(), push (subscription)": 16,
};

interface Coverage {
  readonly result: readonly {
    readonly url: string;
    readonly functions: readonly { readonly ranges: readonly { readonly count: number }[] }[];
  }[];
}

/** The `src` files with a function that ran since the last call. */
async function filesRun(session: Session): Promise<string[]> {
  const coverage = (await session.post("Profiler.takePreciseCoverage")) as Coverage;
  const files = new Set<string>();
  for (const script of coverage.result) {
    if (!script.url.startsWith("file:")) continue;
    const path = relative(REPO_ROOT, fileURLToPath(script.url));
    if (!path.startsWith("src/")) continue;
    if (script.functions.some((fn) => fn.ranges.some((range) => range.count > 0))) files.add(path);
  }
  return [...files].sort();
}

/** Holds `name` for `leaseMs` in this worker thread, answering the main thread once held. */
async function holdInWorker(): Promise<void> {
  const { url, token } = workerData as { url: string; token: string };
  const holder = new LockClient({
    redis: new Redis({ url, token, enableTelemetry: false }),
    prefix: "path",
  });
  parentPort?.on("message", async (name: string) => {
    await holder.lock(name).acquire({ leaseMs: 400 });
    parentPort?.postMessage(name);
  });
}

/** A holder in another isolate: `hold(name)` resolves once it holds `name` for 400 ms. */
function startHolder(
  url: string,
  token: string,
): { hold(name: string): Promise<void>; stop(): Promise<number> } {
  const worker = new Worker(new URL(import.meta.url), { workerData: { url, token } });
  return {
    hold: (name) =>
      new Promise((resolve, reject) => {
        const held = (answered: string) => {
          if (answered !== name) return;
          worker.off("message", held);
          worker.off("error", reject);
          resolve();
        };
        worker.on("message", held);
        worker.once("error", reject);
        worker.postMessage(name);
      }),
    stop: () => worker.terminate(),
  };
}

async function main(): Promise<void> {
  const list = process.argv.includes("--list");
  const server = await startDevServer({ profile: "upstash" });
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
  const failures: string[] = [];
  try {
    const clientOf = (wait: WaitOptions) =>
      new LockClient({
        redis: new Redis({ url: server.url, token: server.token, enableTelemetry: false }),
        prefix: "path",
        wait,
      });
    const holder = startHolder(server.url, server.token);
    const paths: [string, WaitOptions][] = [
      ["lock.acquire(), poll", { mode: "poll" }],
      ["lock.acquire(), push (subscription)", { mode: "push", wakeBy: "subscription" }],
    ];
    for (const [label, wait] of paths) {
      const waiter = clientOf(wait);
      const waitOnce = async () => {
        const name = `path-${Math.random().toString(36).slice(2)}`;
        await holder.hold(name);
        return waiter.lock(name).acquire({ waitMs: 10_000 });
      };
      // Warm-up: modules load, streams open, the server learns the scripts.
      await (await waitOnce()).release();
      const name = `path-${Math.random().toString(36).slice(2)}`;
      await holder.hold(name);
      await filesRun(session);
      // The default hold (watchdog mode), as a user's `acquire({ waitMs })` takes it.
      const held = await waiter.lock(name).acquire({ waitMs: 10_000 });
      const files = await filesRun(session);
      await held.release();
      // The stream of a push waiter lingers a second (STREAM_LINGER_MS), then ends.
      await new Promise((resolve) => setTimeout(resolve, STREAM_LINGER_MS + 200));
      const limit = LIMITS[label]!;
      console.log(`${label}: ${files.length} files of src (limit ${limit})`);
      if (list) for (const file of files) console.log(`  ${file}`);
      if (files.length > limit) {
        failures.push(
          `${label} runs through ${files.length} files of src, over its limit ${limit}`,
        );
      }
    }
    await holder.stop();
  } finally {
    await session.post("Profiler.stopPreciseCoverage");
    session.disconnect();
    await server.close();
  }
  if (failures.length > 0) {
    for (const failure of failures) console.error(`acquire-path: ${failure}`);
    process.exitCode = 1;
  }
}

if (isMainThread) await main();
else await holdInWorker();

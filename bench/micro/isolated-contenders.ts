/**
 * An experiment beside scenario 2: the same contention on one key (K sections of a fixed hold per
 * contender, 20 ± 5 ms round trips on the bench backend), but each contender in a process of its
 * own, as Workers' isolates are, instead of all of them on the bench's one event loop. It prints
 * the same efficiency (ideal / elapsed, ideal as bench/metrics.ts) for edgelock push and
 * polling, so that what the shared event loop costs at small N can be told apart from the
 * protocol. Overlaps are checked on one clock (the parent's), from the contenders' reports.
 *
 * Usage: npx tsx bench/micro/isolated-contenders.ts [--n 2,8] [--k 10] [--hold 5] [--runs 3]
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Redis } from "@upstash/redis";
import { LockClient, type WaitOptions } from "../../src/index.js";
import { startBenchBackend } from "../backend/backend.js";
import { idealSerialMs } from "../metrics.js";
import { measureRoundTrips } from "../scenarios/round-trip.js";

interface Assignment {
  readonly url: string;
  readonly token: string;
  readonly prefix: string;
  readonly wait: WaitOptions;
  readonly sections: number;
  readonly holdMs: number;
}

/** One critical section, in the contender's `performance.timeOrigin + now()` (wall ms). */
interface Section {
  readonly acquiredAt: number;
  readonly releaseAt: number;
  readonly releasedAt: number;
}

const wallNow = () => performance.timeOrigin + performance.now();

async function contender(): Promise<void> {
  const assignment = await new Promise<Assignment>((resolve) => {
    process.once("message", (message) => resolve(message as Assignment));
  });
  const redis = new Redis({ url: assignment.url, token: assignment.token });
  const client = new LockClient({ redis, prefix: assignment.prefix, wait: assignment.wait });
  // Warm the scripts on another key, then wait for the start.
  await (await client.lock(`warm:${process.pid}`).acquire({ leaseMs: 10_000 })).release();
  process.send?.({ ready: true });
  await new Promise<void>((resolve) => process.once("message", () => resolve()));
  const sections: Section[] = [];
  for (let i = 0; i < assignment.sections; i++) {
    const handle = await client.lock("contended").acquire({ leaseMs: 10_000 });
    const acquiredAt = wallNow();
    await new Promise((resolve) => setTimeout(resolve, assignment.holdMs));
    const releaseAt = wallNow();
    await handle.release();
    sections.push({ acquiredAt, releaseAt, releasedAt: wallNow() });
  }
  process.send?.({ sections });
}

async function runOnce(
  backend: Awaited<ReturnType<typeof startBenchBackend>>,
  mode: WaitOptions["mode"],
  n: number,
  k: number,
  holdMs: number,
  roundTripMs: number,
): Promise<{ efficiency: number; overlaps: number }> {
  const prefix = `iso${Date.now().toString(36)}${mode}${n}`;
  const script = fileURLToPath(import.meta.url);
  const children = Array.from({ length: n }, () =>
    fork(script, ["--contender"], { execArgv: ["--import", "tsx"] }),
  );
  const ready = children.map(
    (child) => new Promise<void>((resolve) => child.once("message", () => resolve())),
  );
  for (const child of children) {
    const assignment: Assignment = {
      url: backend.restUrl,
      token: backend.token,
      prefix,
      wait: { mode: mode ?? "poll" },
      sections: k,
      holdMs,
    };
    child.send(assignment);
  }
  await Promise.all(ready);
  const reports = children.map(
    (child) =>
      new Promise<Section[]>((resolve) =>
        child.once("message", (message) => resolve((message as { sections: Section[] }).sections)),
      ),
  );
  const start = wallNow();
  for (const child of children) child.send({ go: true });
  const sections = (await Promise.all(reports)).flat();
  const elapsed = Math.max(...sections.map((section) => section.releasedAt)) - start;
  for (const child of children) child.kill();
  const holds = sections.map((section) => section.releaseAt - section.acquiredAt);
  const ideal = idealSerialMs(holds, roundTripMs);
  // Holds seen from the client: acquire resolved → release sent. Two may not intersect.
  const sorted = [...sections].sort((a, b) => a.acquiredAt - b.acquiredAt);
  let overlaps = 0;
  for (let i = 1; i < sorted.length; i++) {
    const previous = sorted[i - 1];
    const current = sorted[i];
    if (previous !== undefined && current !== undefined && current.acquiredAt < previous.releaseAt)
      overlaps += 1;
  }
  return { efficiency: ideal / elapsed, overlaps };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      n: { type: "string", default: "2,8" },
      k: { type: "string", default: "10" },
      hold: { type: "string", default: "5" },
      runs: { type: "string", default: "3" },
    },
  });
  const ns = (values.n ?? "2,8").split(",").map(Number);
  const k = Number(values.k);
  const holdMs = Number(values.hold);
  const runs = Number(values.runs);
  const backend = await startBenchBackend("upstash");
  try {
    await backend.setLatency({ name: "20±5 ms", latencyMs: 20, jitterMs: 5 });
    const roundTripMs = (await measureRoundTrips(backend)).REST;
    console.log(`R = ${roundTripMs.toFixed(1)} ms; K = ${k}, hold ${holdMs} ms, ${runs} runs each`);
    console.log("mode  N  efficiency % per run            overlaps");
    for (const mode of ["push", "poll"] as const) {
      for (const n of ns) {
        const results = [];
        for (let run = 0; run < runs; run++) {
          results.push(await runOnce(backend, mode, n, k, holdMs, roundTripMs));
        }
        const figures = results.map((result) => (result.efficiency * 100).toFixed(0)).join(", ");
        const overlaps = results.reduce((sum, result) => sum + result.overlaps, 0);
        console.log(
          `${mode.padEnd(4)} ${String(n).padStart(2)}  ${figures.padEnd(30)} ${overlaps}`,
        );
      }
    }
  } finally {
    await backend.close();
  }
}

if (process.argv.includes("--contender")) await contender();
else await main();

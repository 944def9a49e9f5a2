/**
 * `npm run bench`: edgelock side by side with @upstash/lock (same REST server, same latency) and,
 * over a different transport (ioredis over TCP, same redis-server, same latency model), redlock
 * and redis-semaphore. Prints tables, writes JSON under bench/results/ and the contention chart.
 * See docs/benchmarks.md for what is measured and how to read it.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { progressBar } from "../dev/progress.js";
import { parseBenchArgs, USAGE, UsageError } from "./args.js";
import { startBenchBackend } from "./backend/backend.js";
import type { LatencyModel } from "./backend/protocol.js";
import { edgelockPeer, POLL_WAIT, PUSH_SUBSCRIPTION_WAIT, PUSH_WAIT } from "./peers/edgelock.js";
import type { Peer, PeerEnv, Transport } from "./peers/peer.js";
import { redisSemaphorePeer } from "./peers/redis-semaphore.js";
import { redlockPeer } from "./peers/redlock.js";
import { upstashLockPeer } from "./peers/upstash-lock.js";
import { contentionChart } from "./report/chart.js";
import { printColdBurst, printContention, printUncontended, printWorker } from "./report/print.js";
import { runContention } from "./scenarios/contention.js";
import { measureEdgelockOwnCpu } from "./scenarios/edgelock-cpu.js";
import { fairAndReadWriteSections, runFairAndReadWrite } from "./scenarios/fair-and-rw.js";
import { runManyKeys } from "./scenarios/many-keys.js";
import { measureRoundTrips } from "./scenarios/round-trip.js";
import type { ContentionResult } from "./scenarios/run-contenders.js";
import { runUncontended, type UncontendedResult } from "./scenarios/uncontended.js";
import { describeHolds, runVariableHolds } from "./scenarios/variable-holds.js";
import {
  type ColdBurstResult,
  coldBurstLibraries,
  runColdBursts,
  runWorkerScenario,
  type WorkerResult,
  workerLibraries,
} from "./scenarios/worker.js";

let args: ReturnType<typeof parseBenchArgs>;
try {
  args = parseBenchArgs(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof UsageError || error instanceof TypeError)) throw error;
  console.error(`${error.message}\n\n${USAGE}`);
  process.exit(2);
}
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}

const backend = await startBenchBackend(args.profile);
const env: PeerEnv = {
  restUrl: backend.restUrl,
  token: backend.token,
  tcpPort: backend.tcpPort,
  leaseMs: args.leaseMs,
  pushWait: args.profile === "upstash" ? PUSH_SUBSCRIPTION_WAIT : PUSH_WAIT,
};
const peers: Peer[] = [];
for (const id of args.peers) {
  if (id === "edgelock") {
    // The defaults (no `wait` option: what a user gets), then each mode named explicitly.
    peers.push(edgelockPeer(env));
    peers.push(edgelockPeer(env, POLL_WAIT));
    if (args.blind) peers.push(edgelockPeer(env, undefined, true));
    if (args.push) peers.push(edgelockPeer(env, env.pushWait ?? PUSH_WAIT));
    for (const variant of args.variants) peers.push(edgelockPeer(env, variant));
  } else if (id === "upstash-lock") {
    peers.push(upstashLockPeer(env));
    for (const delay of args.upstashDelays) peers.push(upstashLockPeer(env, delay));
  } else if (id === "redlock") {
    peers.push(redlockPeer(env));
  } else if (id === "redis-semaphore") {
    peers.push(redisSemaphorePeer(env));
  }
}

const machine = {
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model ?? "unknown",
  memoryGiB: Math.round(os.totalmem() / 2 ** 30),
  platform: `${os.platform()} ${os.release()}`,
  node: process.version,
};
const startedAt = new Date();
const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`;
console.log(`edgelock bench — ${startedAt.toISOString()}`);
console.log(
  `machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, node ${machine.node}`,
);
console.log(`backend: ${backend.description}`);
console.log(
  `latency: ${args.latencies.map((l) => l.name).join(", ")} per request, injected by the server after running the command (a whole round trip on the reply path)`,
);
console.log(`peers:`);
for (const peer of peers)
  console.log(`  ${peer.label.padEnd(28)} ${peer.transport}  ${peer.config}`);
console.log();

const withScenario = (n: number) => args.scenarios.has(n);
/** Scenario 4 also runs the fair lock in push mode when edgelock push is in the run. */
const fairPush = args.push && args.peers.includes("edgelock");
/** Scenario 4 compares with the exclusive REST locks: edgelock's plain lock and @upstash/lock. */
function scenario4Baselines(): Peer[] {
  return peers.filter((peer) => peer.id === "edgelock" || peer.id === "upstash-lock");
}
/** Scenario 4 runs at the highest latency only, on the N of scenario 2 up to 32. */
function scenario4Settings() {
  const counts = args.contenderCounts.filter((n) => n > 2 && n <= 32);
  return {
    contenderCounts: counts.length > 0 ? counts : args.contenderCounts.slice(0, 1),
    sectionsPerContender: args.sectionsPerContender,
    holdMs: args.holdMs,
  };
}
/**
 * Scenario 5 compares the REST locks: edgelock at its defaults, polling, blind and push, and
 * @upstash/lock.
 */
const variableHoldPeers = peers.filter((peer) =>
  ["edgelock", "edgelock-poll", "edgelock-blind", "edgelock-push", "upstash-lock"].includes(
    peer.id,
  ),
);
const variableHoldSettings = {
  ...args.variableHolds,
  sectionsPerContender: args.sectionsPerContender,
};
const workerSettings = {
  requests: args.workerRequests,
  libraries: workerLibraries(args.peers, args.blind, args.push),
  burstRequests: args.burstRequests,
};
const opsAt = (latency: LatencyModel) =>
  latency.latencyMs === 0
    ? args.uncontendedOps
    : Math.max(20, Math.round(args.uncontendedOps / 10));
const sectionsOneKey =
  args.contenderCounts.reduce((sum, n) => sum + n, 0) * args.sectionsPerContender;
const sectionsManyKeys =
  args.keyCounts.length * args.manyKeysContenders * args.sectionsPerContender;
const units =
  args.latencies.length *
    peers.length *
    ((withScenario(2) ? sectionsOneKey : 0) + (withScenario(3) ? sectionsManyKeys : 0)) +
  (withScenario(1) ? args.latencies.reduce((sum, l) => sum + opsAt(l), 0) * peers.length : 0) +
  (withScenario(4)
    ? fairAndReadWriteSections(scenario4Settings(), scenario4Baselines().length, fairPush)
    : 0) +
  (withScenario(5)
    ? args.variableHolds.contenderCounts.reduce((sum, n) => sum + n, 0) *
      args.sectionsPerContender *
      variableHoldPeers.length
    : 0) +
  (withScenario(6)
    ? workerSettings.requests * workerSettings.libraries.length +
      // Each burst library runs twice: a cold isolate, then the same isolate warm.
      2 * workerSettings.burstRequests * coldBurstLibraries(workerSettings).length
    : 0);
const progress = progressBar("bench", units);
let done = 0;
let drawnAt = 0;
const tick = () => {
  done += 1;
  const now = performance.now();
  // Redraw at most 10 times a second: the bar must not cost the clients CPU.
  if (now - drawnAt > 100) {
    drawnAt = now;
    progress.update(done);
  }
};

const roundTrips: Record<string, Record<Transport, number>> = {};
const uncontended: UncontendedResult[] = [];
const oneKey: ContentionResult[] = [];
const manyKeys: ContentionResult[] = [];
const fair: ContentionResult[] = [];
const readWrite: ContentionResult[] = [];
const variableHolds: ContentionResult[] = [];
const workerResults: WorkerResult[] = [];
const coldBursts: ColdBurstResult[] = [];
let workerFailure: string | undefined;
let edgelockOwnCpuMsPerOp: number | undefined;
const notes: string[] = [];
try {
  for (const latency of args.latencies) {
    await backend.setLatency(latency);
    const trips = await measureRoundTrips(backend);
    roundTrips[latency.name] = trips;
    if (withScenario(1)) {
      for (const peer of peers) {
        uncontended.push(
          await runUncontended(
            backend,
            peer,
            latency,
            opsAt(latency),
            `uncontended:${peer.id}:${latency.latencyMs}`,
            tick,
          ),
        );
      }
    }
    if (withScenario(2)) {
      oneKey.push(
        ...(await runContention(
          backend,
          peers,
          latency,
          trips,
          {
            contenderCounts: args.contenderCounts,
            sectionsPerContender: args.sectionsPerContender,
            holdMs: args.holdMs,
          },
          tick,
        )),
      );
    }
    if (withScenario(3)) {
      manyKeys.push(
        ...(await runManyKeys(
          backend,
          peers,
          latency,
          trips,
          {
            contenders: args.manyKeysContenders,
            keyCounts: args.keyCounts,
            sectionsPerContender: args.sectionsPerContender,
            holdMs: args.holdMs,
          },
          tick,
        )),
      );
    }
  }
  if (withScenario(1) && args.peers.includes("edgelock")) {
    edgelockOwnCpuMsPerOp = await measureEdgelockOwnCpu(args.uncontendedOps * 4);
  }
  const lastLatency = args.latencies[args.latencies.length - 1];
  if (withScenario(4) && lastLatency !== undefined) {
    await backend.setLatency(lastLatency);
    const trips = roundTrips[lastLatency.name] ?? (await measureRoundTrips(backend));
    const exclusive = scenario4Baselines();
    const results = await runFairAndReadWrite(
      backend,
      env,
      exclusive,
      lastLatency,
      trips,
      scenario4Settings(),
      fairPush,
      tick,
    );
    fair.push(...results.fair);
    readWrite.push(...results.readWrite);
    notes.push(...results.notes);
  }
  // Scenarios 5 and 6 run at the highest latency only, like scenario 4.
  if (withScenario(5) && lastLatency !== undefined) {
    await backend.setLatency(lastLatency);
    const trips = roundTrips[lastLatency.name] ?? (await measureRoundTrips(backend));
    variableHolds.push(
      ...(await runVariableHolds(
        backend,
        variableHoldPeers,
        lastLatency,
        trips,
        variableHoldSettings,
        tick,
      )),
    );
  }
  if (withScenario(6) && lastLatency !== undefined && workerSettings.libraries.length > 0) {
    await backend.setLatency(lastLatency);
    const trips = roundTrips[lastLatency.name] ?? (await measureRoundTrips(backend));
    try {
      workerResults.push(
        ...(await runWorkerScenario(backend, lastLatency, trips.REST, workerSettings, tick)),
      );
      coldBursts.push(
        ...(await runColdBursts(backend, lastLatency, trips.REST, workerSettings, tick)),
      );
    } catch (error) {
      // wrangler/workerd failing to start must not cost the results of the other scenarios.
      workerFailure = error instanceof Error ? error.message : String(error);
    }
  }
} finally {
  progress.finish();
  await backend.close();
}

console.log();
for (const latency of args.latencies) {
  const trips = roundTrips[latency.name];
  console.log(
    `== ${latency.name}: measured round trip REST ${trips?.REST.toFixed(2)} ms, TCP ${trips?.TCP.toFixed(2)} ms`,
  );
}
if (uncontended.length > 0) {
  console.log("\n== Scenario 1: uncontended acquire + release");
  console.log(printUncontended(uncontended));
  if (edgelockOwnCpuMsPerOp !== undefined) {
    console.log(
      `edgelock's own CPU per acquire+release (no transport, canned replies): ${(edgelockOwnCpuMsPerOp * 1000).toFixed(1)} µs`,
    );
  }
}
if (oneKey.length > 0) {
  console.log(
    `\n== Scenario 2: contention on one key (K = ${args.sectionsPerContender} sections of ${args.holdMs} ms per contender)`,
  );
  console.log(printContention(oneKey, false));
}
if (manyKeys.length > 0) {
  console.log(
    `\n== Scenario 3: ${args.manyKeysContenders} contenders over M keys (contender i on key i mod M)`,
  );
  console.log(printContention(manyKeys, true));
}
if (withScenario(4)) {
  console.log("\n== Scenario 4: fair lock and read-write lock (1 write in 10 sections)");
  if (fair.length > 0) console.log(printContention(fair, false));
  if (readWrite.length > 0) console.log(printContention(readWrite, false));
  for (const note of notes) console.log(note);
}
if (variableHolds.length > 0) {
  console.log(
    `\n== Scenario 5: variable holds on one key (K = ${args.sectionsPerContender}; holds ${describeHolds(variableHoldSettings)}, in the order the lock is granted)`,
  );
  console.log(printContention(variableHolds, false));
}
if (workerFailure !== undefined) {
  console.log(`\n== Scenario 6: the Worker did not run: ${workerFailure}`);
}
if (workerResults.length > 0) {
  console.log(
    `\n== Scenario 6: the Worker (workerd via wrangler), ${args.workerRequests} concurrent increments of one counter (GET + SET inside the lock)`,
  );
  console.log(printWorker(workerResults));
  console.log(
    "lock cmd/inc = (every command the REST server ran − the counter's GET and SET) / increments; HTTP req/inc counts a pipeline once (@upstash/redis auto-pipelines in a Worker); max lock cmd/invocation: counted by the Worker per HTTP request it served (a 409 and its re-send are two); over 50: invocations past the free plan's 50 subrequests; ideal = increments × 3R.",
  );
}
if (coldBursts.length > 0) {
  console.log(
    `\n== Scenario 6: the cold burst, ${args.burstRequests} concurrent requests to a fresh isolate (a ${coldBursts[0]?.sectionMs} ms section, waitMs ${coldBursts[0]?.waitMs}), none re-sent`,
  );
  console.log(printColdBurst(coldBursts));
  console.log(
    "bound = waitMs / (section + R): the most any lock serves in the wait; full EVALs: script texts sent; served by tenth: 200s among the 1st … 10th tenth of the requests in send order.",
  );
}
console.log(
  "\nefficiency = ideal / elapsed; ideal = max over keys of (Σ measured holds on the key + (sections on the key + 1) × R), R = uncontended round trip of the transport (median, measured before the runs).",
);

const report = {
  command,
  startedAt: startedAt.toISOString(),
  machine,
  backend: backend.description,
  profile: args.profile,
  latencyModels: args.latencies,
  latencyModel:
    "per request, injected by the REST server (and the TCP proxy) after the command ran: the whole round trip is on the reply path, uniform ± jitter",
  settings: {
    contenderCounts: args.contenderCounts,
    sectionsPerContender: args.sectionsPerContender,
    holdMs: args.holdMs,
    keyCounts: args.keyCounts,
    manyKeysContenders: args.manyKeysContenders,
    variableHolds: { ...variableHoldSettings, holds: describeHolds(variableHoldSettings) },
    workerRequests: args.workerRequests,
    burstRequests: args.burstRequests,
    uncontendedOps: args.uncontendedOps,
    leaseMs: args.leaseMs,
  },
  peers: peers.map(({ id, label, transport, config }) => ({ id, label, transport, config })),
  idealBound:
    "ideal = max over keys of (Σ measured holds on the key + (sections on the key + 1) × R); R = uncontended round trip of the transport under the latency model (median of 200 sequential one-command requests, measured before the runs; the same for every library of a transport); efficiency = ideal / elapsed",
  roundTrips,
  uncontended,
  edgelockOwnCpuMsPerOp,
  contention: oneKey,
  manyKeys,
  fair,
  readWrite,
  variableHolds,
  worker: workerResults,
  coldBurst: coldBursts,
  ...(workerFailure === undefined ? {} : { workerFailure }),
  notes,
};
mkdirSync(path.dirname(args.jsonPath), { recursive: true });
writeFileSync(args.jsonPath, `${JSON.stringify(report, null, 2)}\n`);
console.log(`\nresults: ${args.jsonPath}`);

const chartLatency = args.latencies[args.latencies.length - 1];
if (args.svgPath !== undefined && chartLatency !== undefined && oneKey.length > 0) {
  const svg = contentionChart({
    title: `Contention on one key — ${chartLatency.name} round trips, ${args.holdMs} ms holds, K = ${args.sectionsPerContender}`,
    subtitle: `${startedAt.toISOString().slice(0, 10)} · ${machine.cpus} cores · ${command} · TCP peers use ioredis, not REST`,
    results: oneKey.filter((r) => r.latency === chartLatency.name),
  });
  mkdirSync(path.dirname(args.svgPath), { recursive: true });
  writeFileSync(args.svgPath, svg);
  console.log(`chart: ${args.svgPath}`);
}

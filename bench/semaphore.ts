/**
 * `npm run bench:semaphore`: a counting semaphore of 4 permits on one key, N contenders (8 and
 * 32) each running K sections of hold H, edgelock's `client.semaphore` over REST (polling, and
 * push over a subscription as production Upstash serves it) beside redis-semaphore's `Semaphore`
 * over TCP (ioredis through the same latency model, the same redis-server), on the `upstash`
 * profile. Measures throughput against the ideal bound (permits × 1 / (hold + round trip)),
 * requests per acquisition (a subscribe counts; pushed words are listed apart), the most holders
 * ever inside at once (must be ≤ 4) and waits. Writes bench/results/semaphore-<date>.json.
 * Options: --latency 0,20 --sections 10 --hold 20 --contenders 8,32.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { Redis } from "@upstash/redis";
import { Semaphore as RedisSemaphore } from "redis-semaphore";
import { LockClient, type PermitHandle } from "../src/index.js";
import { startBenchBackend, wireDelta } from "./backend/backend.js";
import type { LatencyModel } from "./backend/protocol.js";
import { mean, percentile } from "./metrics.js";
import type { PeerEnv, Transport } from "./peers/peer.js";
import { connectTcp } from "./peers/tcp.js";
import { measureRoundTrips } from "./scenarios/round-trip.js";

const PERMITS = 4;
const LEASE_MS = 10_000;

/** One contender of a library: takes one permit of `key`, returns it. */
interface PermitContender {
  acquire(): Promise<void>;
  release(): Promise<void>;
  close(): Promise<void>;
}

interface SemaphorePeer {
  readonly id: string;
  readonly label: string;
  readonly transport: Transport;
  readonly config: string;
  contender(key: string): Promise<PermitContender>;
}

/** `push`: told over a subscription (the semaphore's hand-off channels), else polling. */
function edgelockSemaphore(env: PeerEnv, push = false): SemaphorePeer {
  return {
    id: push ? "edgelock-semaphore-push" : "edgelock-semaphore",
    label: push ? "edgelock semaphore push" : "edgelock semaphore",
    transport: "REST",
    config: `client.semaphore(key, { initialPermits: ${PERMITS} }), lease ${LEASE_MS} ms, ${
      push
        ? 'wait { mode: "push", wakeBy: "subscription" } (FIFO; a release grants parked waiters)'
        : "wait defaults (FIFO, polling)"
    }`,
    contender: async (key) => {
      const client = new LockClient({
        redis: new Redis({ url: env.restUrl, token: env.token }),
        prefix: "bench",
        wait: push
          ? { maxPolls: 100_000, mode: "push", wakeBy: "subscription" }
          : { maxPolls: 100_000 },
      });
      const semaphore = client.semaphore(key, { initialPermits: PERMITS });
      let held: PermitHandle | undefined;
      return {
        acquire: async () => {
          held = await semaphore.acquire({ leaseMs: LEASE_MS });
        },
        release: async () => {
          await held?.release();
          held = undefined;
        },
        close: async () => {},
      };
    },
  };
}

function redisSemaphore(env: PeerEnv): SemaphorePeer {
  return {
    id: "redis-semaphore",
    label: "redis-semaphore Semaphore (TCP)",
    transport: "TCP",
    config: `Semaphore(limit ${PERMITS}) { lockTimeout: ${LEASE_MS}, acquireTimeout: 600000, retryInterval: 10 (default), refreshInterval: 0 }`,
    contender: async (key) => {
      const connection = await connectTcp(env);
      const semaphore = new RedisSemaphore(connection, `redis-semaphore:${key}`, PERMITS, {
        lockTimeout: LEASE_MS,
        acquireTimeout: 600_000,
        refreshInterval: 0,
      });
      return {
        acquire: () => semaphore.acquire(),
        release: () => semaphore.release(),
        close: async () => {
          connection.disconnect();
        },
      };
    },
  };
}

interface Row {
  readonly peer: string;
  readonly transport: Transport;
  readonly latency: string;
  readonly contenders: number;
  readonly permits: number;
  readonly acquisitions: number;
  readonly holdMs: number;
  readonly roundTripMs: number;
  readonly elapsedMs: number;
  readonly throughputPerSec: number;
  /** permits / (hold + round trip), per second: no semaphore hands permits over faster. */
  readonly idealPerSec: number;
  readonly efficiency: number;
  readonly requestsPerAcquisition: number;
  /** Hand-off words pushed to subscribed waiters, per acquisition (not requests). */
  readonly pushedPerAcquisition: number;
  readonly mostInside: number;
  readonly waitP50Ms: number;
  readonly waitP99Ms: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function run(
  peer: SemaphorePeer,
  backend: Awaited<ReturnType<typeof startBenchBackend>>,
  latency: LatencyModel,
  roundTripMs: number,
  contenders: number,
  sections: number,
  holdMs: number,
): Promise<Row> {
  const key = `semaphore-${peer.id}-${latency.latencyMs}-${contenders}-${Date.now()}`;
  const all: PermitContender[] = [];
  for (let i = 0; i < contenders; i++) all.push(await peer.contender(key));
  try {
    // Warm up off the clock: connections open, scripts cached.
    for (const contender of all.slice(0, PERMITS)) {
      await contender.acquire();
      await contender.release();
    }
    let inside = 0;
    let mostInside = 0;
    const waits: number[] = [];
    const holds: number[] = [];
    const before = await backend.snapshot();
    const start = performance.now();
    await Promise.all(
      all.map(async (contender) => {
        for (let done = 0; done < sections; done++) {
          const askedAt = performance.now();
          await contender.acquire();
          const acquiredAt = performance.now();
          waits.push(acquiredAt - askedAt);
          inside += 1;
          mostInside = Math.max(mostInside, inside);
          await sleep(holdMs);
          inside -= 1;
          holds.push(performance.now() - acquiredAt);
          await contender.release();
        }
      }),
    );
    const elapsedMs = performance.now() - start;
    const after = await backend.snapshot();
    const wire =
      peer.transport === "REST"
        ? wireDelta(after.rest, before.rest)
        : wireDelta(after.tcp, before.tcp);
    const acquisitions = contenders * sections;
    const throughputPerSec = (acquisitions / elapsedMs) * 1000;
    const idealPerSec = (PERMITS / (mean(holds) + roundTripMs)) * 1000;
    return {
      peer: peer.label,
      transport: peer.transport,
      latency: latency.name,
      contenders,
      permits: PERMITS,
      acquisitions,
      holdMs,
      roundTripMs: round(roundTripMs),
      elapsedMs: round(elapsedMs),
      throughputPerSec: round(throughputPerSec),
      idealPerSec: round(idealPerSec),
      efficiency: round(throughputPerSec / idealPerSec, 3),
      requestsPerAcquisition: round(wire.requests / acquisitions, 2),
      pushedPerAcquisition: round((wire.commandsByName.pushed ?? 0) / acquisitions, 2),
      mostInside,
      waitP50Ms: round(percentile(waits, 0.5)),
      waitP99Ms: round(percentile(waits, 0.99)),
    };
  } finally {
    await Promise.all(all.map((contender) => contender.close()));
  }
}

function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

const { values } = parseArgs({
  options: {
    latency: { type: "string", default: "0,20" },
    sections: { type: "string", default: "10" },
    hold: { type: "string", default: "20" },
    contenders: { type: "string", default: "8,32" },
  },
});
const latencies: LatencyModel[] = values.latency.split(",").map((text) => {
  const ms = Number(text);
  return { name: ms === 0 ? "0 ms" : `${ms}±5 ms`, latencyMs: ms, jitterMs: ms === 0 ? 0 : 5 };
});
const sections = Number(values.sections);
const holdMs = Number(values.hold);
const counts = values.contenders.split(",").map(Number);

const backend = await startBenchBackend("upstash");
const env: PeerEnv = {
  restUrl: backend.restUrl,
  token: backend.token,
  tcpPort: backend.tcpPort,
  leaseMs: LEASE_MS,
};
const peers = [edgelockSemaphore(env), edgelockSemaphore(env, true), redisSemaphore(env)];
console.log(`semaphore bench: ${PERMITS} permits, hold ${holdMs} ms, ${sections} sections each`);
console.log(`backend: ${backend.description}`);
for (const peer of peers)
  console.log(`  ${peer.label.padEnd(34)} ${peer.transport}  ${peer.config}`);
const rows: Row[] = [];
try {
  for (const latency of latencies) {
    await backend.setLatency(latency);
    const trips = await measureRoundTrips(backend);
    for (const contenders of counts) {
      for (const peer of peers) {
        const row = await run(
          peer,
          backend,
          latency,
          trips[peer.transport],
          contenders,
          sections,
          holdMs,
        );
        rows.push(row);
        console.log(
          `${row.latency.padEnd(8)} N=${String(contenders).padEnd(3)} ${row.peer.padEnd(34)} ` +
            `${row.throughputPerSec.toFixed(1).padStart(7)}/s of ${row.idealPerSec.toFixed(1)}/s ideal ` +
            `(${(row.efficiency * 100).toFixed(0)} %), ${row.requestsPerAcquisition} req/acq, ` +
            `${row.pushedPerAcquisition} pushed/acq, ` +
            `most inside ${row.mostInside}, wait p50 ${row.waitP50Ms} ms p99 ${row.waitP99Ms} ms`,
        );
      }
    }
  }
} finally {
  await backend.close();
}
const file = path.join(
  "bench",
  "results",
  `semaphore-${new Date().toISOString().slice(0, 10)}.json`,
);
mkdirSync(path.dirname(file), { recursive: true });
writeFileSync(
  file,
  `${JSON.stringify({ permits: PERMITS, holdMs, sections, backend: backend.description, peers: peers.map(({ id, label, transport, config }) => ({ id, label, transport, config })), rows }, null, 2)}\n`,
);
console.log(`wrote ${file}`);

/**
 * Where the database is, against what a lock costs (issue 46): contenders in three regions
 * around one lock, under three topologies —
 * - **one regional database** (in `eu`): every client pays its round trip to it;
 * - **one global database** (primary in `eu`, read replicas in `us` and `ap`): a lock writes, so
 *   every script runs on the primary (Upstash routes writes there), paid at the client's round
 *   trip to the primary; each write is billed once per region (docs/upstash.md);
 * - **RedLock over three regional databases** (`eu`, `us`, `ap`): each attempt asks all three
 *   and needs two, so it waits for the second-nearest; three times the commands.
 *
 * Round trips are simulated on the client side (half before a request, half after its answer),
 * one local REST server per database (the embedded engine), so each client sees its own
 * distances. Polling (the default way of waiting): push over a subscription would need the
 * words delayed too. Kleppmann's caveats on RedLock (docs/redlock.md) hold whatever it costs.
 *
 * Usage: npx tsx bench/topology.ts [--k 5] [--hold 5] [--json PATH]   (npm run bench:topology)
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Redis } from "@upstash/redis";
import { type DevServer, startDevServer } from "../dev/index.js";
import { type HeldLock, LockClient, RedLock } from "../src/index.js";
import type { RedisLike } from "../src/transport/redis-like.js";
import { mean, percentile } from "./metrics.js";

type Region = "eu" | "us" | "ap";
const REGIONS: readonly Region[] = ["eu", "us", "ap"];

/** Round trips between a client's region and a database's, in ms (public inter-region figures, rounded). */
const RTT_MS: Readonly<Record<Region, Readonly<Record<Region, number>>>> = {
  eu: { eu: 2, us: 80, ap: 160 },
  us: { eu: 80, us: 2, ap: 140 },
  ap: { eu: 160, us: 140, ap: 2 },
};

/** Read regions of the global database: each write is billed in the primary and in each. */
const GLOBAL_READ_REGIONS = 2;

interface TopologyRow {
  readonly topology: string;
  /** Uncontended acquire + release, per client region (ms, median of 5). */
  readonly uncontendedMs: Readonly<Record<Region, number>>;
  readonly contenders: number;
  readonly acquisitions: number;
  readonly acquisitionsPerSec: number;
  readonly handOffP50Ms: number;
  readonly handOffP99Ms: number;
  readonly requestsPerAcquisition: number;
  /** What Upstash would bill per acquisition (global: each write in every region). */
  readonly billedPerAcquisition: number;
  readonly failures: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** `redis` seen from `rttMs` away: half the round trip out, half back. */
function distant(redis: RedisLike, rttMs: number, counted: { requests: number }): RedisLike {
  const far = async <T>(send: () => Promise<T>): Promise<T> => {
    counted.requests += 1;
    await sleep(rttMs / 2);
    const answer = await send();
    await sleep(rttMs / 2);
    return answer;
  };
  return {
    eval: (script, keys, args) => far(() => redis.eval(script, keys, args)),
    evalsha: (sha, keys, args) => far(() => redis.evalsha(sha, keys, args)),
  };
}

interface Lockable {
  acquire(options: { leaseMs: number; waitMs: number }): Promise<HeldLock>;
}

interface Topology {
  readonly name: string;
  /** The lock as a client in `region` sees it. */
  lockIn(region: Region, name: string): Lockable;
  /** Billed commands so far. */
  billed(): number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      k: { type: "string", default: "5" },
      hold: { type: "string", default: "5" },
      json: { type: "string", default: "bench/results/topology-latest.json" },
    },
  });
  const k = Number(values.k);
  const holdMs = Number(values.hold);
  const servers = new Map<Region, DevServer>();
  for (const region of REGIONS) servers.set(region, await startDevServer({ profile: "upstash" }));
  const counted = { requests: 0 };
  const billedOf = (regions: readonly Region[]) =>
    regions.reduce((sum, region) => sum + servers.get(region)!.stats.snapshot().billedCommands, 0);
  const clientOf = (client: Region, database: Region, prefix: string) => {
    const server = servers.get(database)!;
    const redis = new Redis({ url: server.url, token: server.token, enableTelemetry: false });
    return new LockClient({
      redis: distant(redis, RTT_MS[client][database], counted),
      prefix,
      // Far clients need a longer wait budget than the default 100 polls at 160 ms a poll.
      wait: { mode: "poll", maxPolls: 10_000 },
    });
  };
  const topologies: Topology[] = [
    {
      name: "one regional database (eu)",
      lockIn: (region, name) => clientOf(region, "eu", "regional").lock(name),
      billed: () => billedOf(["eu"]),
    },
    {
      name: `one global database (primary eu, ${GLOBAL_READ_REGIONS} read regions)`,
      lockIn: (region, name) => clientOf(region, "eu", "global").lock(name),
      // Every command of a lock's scripts is part of a write: billed in every region.
      billed: () => billedOf(["eu"]) * (1 + GLOBAL_READ_REGIONS),
    },
    {
      name: "RedLock over three regional databases (eu, us, ap)",
      lockIn: (region, name) =>
        new RedLock(REGIONS.map((database) => clientOf(region, database, "quorum"))).lock(name),
      billed: () => billedOf(REGIONS),
    },
  ];

  const rows: TopologyRow[] = [];
  try {
    for (const topology of topologies) {
      process.stderr.write(`topology: ${topology.name}\n`);
      const uncontended: Partial<Record<Region, number>> = {};
      for (const region of REGIONS) {
        const lock = topology.lockIn(region, `alone-${region}`);
        const times: number[] = [];
        for (let i = 0; i < 5; i++) {
          const start = performance.now();
          const held = await lock.acquire({ leaseMs: 10_000, waitMs: 0 });
          await held.release();
          times.push(performance.now() - start);
        }
        uncontended[region] = percentile(times, 0.5);
      }
      // Two contenders per region on one lock, k sections each.
      const contenders = REGIONS.flatMap((region) => [region, region]);
      const billedBefore = topology.billed();
      const requestsBefore = counted.requests;
      const handOffs: number[] = [];
      let lastReleaseAt: number | undefined;
      let acquisitions = 0;
      let failures = 0;
      const start = performance.now();
      await Promise.all(
        contenders.map(async (region) => {
          const lock = topology.lockIn(region, "contended");
          for (let i = 0; i < k; i++) {
            try {
              const held = await lock.acquire({ leaseMs: 10_000, waitMs: 120_000 });
              if (lastReleaseAt !== undefined) handOffs.push(performance.now() - lastReleaseAt);
              acquisitions += 1;
              await sleep(holdMs);
              lastReleaseAt = performance.now();
              await held.release();
            } catch (error) {
              failures += 1;
              process.stderr.write(`  ${region}: ${(error as Error).name}\n`);
            }
          }
        }),
      );
      const elapsedMs = performance.now() - start;
      rows.push({
        topology: topology.name,
        uncontendedMs: uncontended as Record<Region, number>,
        contenders: contenders.length,
        acquisitions,
        acquisitionsPerSec: (acquisitions / elapsedMs) * 1000,
        handOffP50Ms: percentile(handOffs, 0.5),
        handOffP99Ms: percentile(handOffs, 0.99),
        requestsPerAcquisition: (counted.requests - requestsBefore) / acquisitions,
        billedPerAcquisition: (topology.billed() - billedBefore) / acquisitions,
        failures,
      });
    }
  } finally {
    for (const server of servers.values()) await server.close();
  }

  const fixed = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : "—");
  console.log(
    `round trips (ms): eu–us ${RTT_MS.eu.us}, eu–ap ${RTT_MS.eu.ap}, us–ap ${RTT_MS.us.ap}, within a region ${RTT_MS.eu.eu}; ` +
      `${k} sections of ${holdMs} ms per contender, two contenders per region, polling`,
  );
  console.log(
    "| topology | acquire+release alone, eu / us / ap (ms) | acq/s | hand-off p50 / p99 (ms) | req/acq | billed/acq | fail |",
  );
  console.log("| --- | --- | ---: | --- | ---: | ---: | ---: |");
  for (const row of rows) {
    const alone = REGIONS.map((region) => fixed(row.uncontendedMs[region])).join(" / ");
    console.log(
      `| ${row.topology} | ${alone} | ${fixed(row.acquisitionsPerSec, 1)} | ${fixed(row.handOffP50Ms)} / ${fixed(row.handOffP99Ms)} | ${fixed(row.requestsPerAcquisition, 1)} | ${fixed(row.billedPerAcquisition, 1)} | ${row.failures} |`,
    );
  }
  writeFileSync(
    values.json,
    `${JSON.stringify({ date: new Date().toISOString(), rttMs: RTT_MS, k, holdMs, rows, meanAcquisitionsPerSec: mean(rows.map((row) => row.acquisitionsPerSec)) }, null, 2)}\n`,
  );
  console.log(`results: ${values.json}`);
}

await main();

/**
 * What each lock operation costs in billed commands (what Upstash bills: every command sent plus
 * every `redis.call` its scripts ran), held to a budget per operation the way scripts/size.ts
 * holds bytes, so the cost cannot creep back.
 *
 * Every operation runs on the local server's `upstash` profile, uncontended unless it is the busy
 * attempt, warm (the scripts already cached, as in a running Worker), on the embedded engine and
 * on a real redis-server when one is installed: both count the same way and must agree. Each
 * operation is measured several times on fresh names; a figure that varies fails too.
 *
 * Usage: npx tsx scripts/cost-check.ts   (npm run cost; part of npm test)
 * Prints a table and writes bench/results/cost-latest.json. A budget that is exceeded fails with
 * the operation and both figures; lower a budget when a change makes an operation cheaper.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "@upstash/redis";
import { type DevServer, startDevServer } from "../dev/index.js";
import { findRedisServerBinary } from "../dev/redis-server.js";
import { LockClient } from "../src/index.js";
import { REPO_ROOT } from "./packed-project.js";

/**
 * Billed commands per operation, at most. Set to the figures measured on 2026-11-28 (before the
 * Lean work of issue 42, whose targets are ≤ 12 for an uncontended acquire + release), lowered as
 * that work lands: the plain and fair lock's fast path (acquire 21 → 6, release 17 → 6; the
 * write lock's release shares the release script's new opening, 18 → 16).
 */
const BUDGETS: Readonly<Record<string, number>> = {
  "lock: acquire": 6,
  "lock: release": 6,
  "lock: extend": 5,
  // A busy attempt no longer prunes the queue's dead (the releasing hand-off does; a fair one
  // that finds the lock free still does): 10 → 9, the write lock's 12 → 11.
  "lock: busy attempt": 9,
  "fair lock: acquire": 6,
  "fair lock: release": 6,
  "fair lock: extend": 5,
  "fair lock: busy attempt": 9,
  // The read and write lock's fast path (read acquire 16 → 9, release 14 → 6, extend 8 → 6, busy
  // 10 → 9; write acquire 26 → 6, release 16 → 6, busy 14 → 13); then the read side in one key,
  // no per-owner count kept in step, and a release fast path without the clock (read acquire
  // 9 → 7, release 6 → 5, extend 6 → 5).
  "read lock: acquire": 7,
  "read lock: release": 5,
  "read lock: extend": 5,
  "read lock: busy attempt": 9,
  "write lock: acquire": 6,
  "write lock: release": 6,
  "write lock: extend": 5,
  "write lock: busy attempt": 11,
  // The semaphore's fast path: an acquire with nobody queued or parked, a release nobody waits
  // behind, a busy attempt that reads no queue (21, 16, 17 before); its extend no longer prunes
  // every lease first (8 before). Then its holds in one hash, the sole hold's lease its key's TTL
  // (no clock): acquire 10 → 7 (measured with the capacity set, as in a running app; a name's
  // first acquire also sets it: one SET more), release 7 → 5, extend 7 → 3.
  "semaphore: acquire": 7,
  "semaphore: release": 5,
  "semaphore: extend": 3,
  "semaphore: busy attempt": 8,
  // DECR without reading the count first (5 before).
  "latch: countDown": 4,
  "latch: await (open)": 3,
  "latch: await (closed, waitMs 0)": 3,
  "multi-lock (2 members): acquire": 17,
  "multi-lock (2 members): release": 13,
  "multi-lock (2 members): extend": 10,
  "multi-lock (2 members): busy attempt": 8,
};

/** Upstash's pay-as-you-go price (docs/upstash.md): $0.20 per 100 000 commands. */
const DOLLARS_PER_COMMAND = 0.2 / 100_000;
const REPEATS = 3;
const LEASE_MS = 30_000;
const RESULT_FILE = join(REPO_ROOT, "bench", "results", "cost-latest.json");

type BackendKind = "embedded" | "redis-server";

interface Figure {
  readonly billed: number;
  readonly requests: number;
}

/** Runs `operation` and records what it cost under `label`. */
type Measure = <T>(label: string, operation: () => Promise<T>) => Promise<T>;

/** Two clients of one database, as two isolates: `holder` and `contender` (other owners). */
interface Clients {
  readonly holder: LockClient;
  readonly contender: LockClient;
}

/** Handles as every kind returns them. */
interface Held {
  extend(leaseMs: number): Promise<unknown>;
  release(): Promise<void>;
}

interface Acquirable {
  acquire(options: { leaseMs: number }): Promise<Held>;
  tryAcquire(options: { leaseMs: number }): Promise<Held | null>;
}

/**
 * acquire, extend, release uncontended; then a busy attempt: `contended(contender)` tries while
 * `blocker(holder)` holds. `prepare` runs first, unmeasured (a semaphore's capacity).
 */
async function exclusiveKind(
  kind: string,
  clients: Clients,
  measure: Measure,
  make: (client: LockClient, name: string) => Acquirable,
  blocker: (client: LockClient, name: string) => Acquirable = make,
  prepare?: (client: LockClient, name: string) => Promise<unknown>,
): Promise<void> {
  const name = `cost-${Math.random().toString(36).slice(2)}`;
  await prepare?.(clients.holder, name);
  const target = make(clients.holder, name);
  const held = await measure(`${kind}: acquire`, () => target.acquire({ leaseMs: LEASE_MS }));
  // Twice the lease: an extend that re-arms it (one to the same lease within the same ms may
  // skip the PEXPIRE, and the figure would vary with timing).
  await measure(`${kind}: extend`, () => held.extend(2 * LEASE_MS));
  await measure(`${kind}: release`, () => held.release());
  const blocking = await blocker(clients.holder, name).acquire({ leaseMs: LEASE_MS });
  const attempt = await measure(`${kind}: busy attempt`, () =>
    make(clients.contender, name).tryAcquire({ leaseMs: LEASE_MS }),
  );
  if (attempt !== null) throw new Error(`${kind}: the busy attempt took a held lock`);
  await blocking.release();
}

async function latch(clients: Clients, measure: Measure): Promise<void> {
  const name = `cost-${Math.random().toString(36).slice(2)}`;
  const counted = clients.holder.countDownLatch(name);
  await counted.trySetCount(2);
  await measure("latch: countDown", () => counted.countDown());
  const waiting = clients.contender.countDownLatch(name);
  const closed = await measure("latch: await (closed, waitMs 0)", () =>
    waiting.await({ waitMs: 0 }),
  );
  if (closed) throw new Error("latch: await on a closed latch said open");
  await counted.countDown();
  const open = await measure("latch: await (open)", () => waiting.await({ waitMs: 0 }));
  if (!open) throw new Error("latch: await on an open latch said closed");
}

/** One pass over every kind and operation. */
async function scenario(clients: Clients, measure: Measure): Promise<void> {
  await exclusiveKind("lock", clients, measure, (client, name) => client.lock(name));
  await exclusiveKind("fair lock", clients, measure, (client, name) => client.fairLock(name));
  await exclusiveKind(
    "read lock",
    clients,
    measure,
    (client, name) => client.readWriteLock(name).readLock(),
    (client, name) => client.readWriteLock(name).writeLock(),
  );
  await exclusiveKind("write lock", clients, measure, (client, name) =>
    client.readWriteLock(name).writeLock(),
  );
  const semaphore = (client: LockClient, name: string) => client.semaphore(name);
  await exclusiveKind("semaphore", clients, measure, semaphore, semaphore, (client, name) =>
    client.semaphore(name).trySetPermits(1),
  );
  await latch(clients, measure);
  await exclusiveKind(
    "multi-lock (2 members)",
    clients,
    measure,
    (client, name) => client.multiLock([client.lock(`${name}:a`), client.lock(`${name}:b`)]),
    // One member held is enough to make the whole multi-lock busy.
    (client, name) => client.lock(`${name}:b`),
  );
}

/** Every operation's figures over REPEATS passes (after a warm-up pass) on one backend. */
async function measureOn(backend: BackendKind): Promise<Map<string, Figure[]>> {
  const server: DevServer = await startDevServer({ backend, profile: "upstash" });
  try {
    const client = () =>
      new LockClient({
        redis: new Redis({ url: server.url, token: server.token, enableTelemetry: false }),
        prefix: "cost",
      });
    const clients: Clients = { holder: client(), contender: client() };
    const figures = new Map<string, Figure[]>();
    let recording = false;
    const measure: Measure = async (label, operation) => {
      const before = server.stats.snapshot();
      const result = await operation();
      const after = server.stats.snapshot();
      if (recording) {
        const list = figures.get(label) ?? [];
        list.push({
          billed: after.billedCommands - before.billedCommands,
          requests: after.requests - before.requests,
        });
        figures.set(label, list);
      }
      return result;
    };
    // The warm-up sends each script once by EVAL; from then on EVALSHA, as a running Worker.
    await scenario(clients, measure);
    recording = true;
    for (let pass = 0; pass < REPEATS; pass++) await scenario(clients, measure);
    return figures;
  } finally {
    await server.close();
  }
}

interface Row {
  readonly operation: string;
  readonly billed: number;
  readonly requests: number;
  readonly budget: number | undefined;
  readonly byBackend: Readonly<Record<string, Figure>>;
  readonly problems: readonly string[];
}

function rowsOf(results: ReadonlyMap<BackendKind, Map<string, Figure[]>>): Row[] {
  const operations = [...new Set([...results.values()].flatMap((figures) => [...figures.keys()]))];
  return operations.map((operation) => {
    const problems: string[] = [];
    const byBackend: Record<string, Figure> = {};
    for (const [backend, figures] of results) {
      const runs = figures.get(operation) ?? [];
      const billed = new Set(runs.map((run) => run.billed));
      if (billed.size > 1) {
        problems.push(`${operation}: varies on ${backend} (${[...billed].join(", ")})`);
      }
      byBackend[backend] = {
        billed: Math.max(...runs.map((run) => run.billed)),
        requests: Math.max(...runs.map((run) => run.requests)),
      };
    }
    const figures = Object.values(byBackend);
    const billed = Math.max(...figures.map((figure) => figure.billed));
    const requests = Math.max(...figures.map((figure) => figure.requests));
    if (new Set(figures.map((figure) => figure.billed)).size > 1) {
      problems.push(
        `${operation}: the backends disagree (${Object.entries(byBackend)
          .map(([backend, figure]) => `${backend} ${figure.billed}`)
          .join(", ")})`,
      );
    }
    const budget = BUDGETS[operation];
    if (budget === undefined) problems.push(`${operation}: no budget in scripts/cost-check.ts`);
    else if (billed > budget) {
      problems.push(
        `${operation}: ${billed} billed commands, over its budget of ${budget} (scripts/cost-check.ts)`,
      );
    }
    return { operation, billed, requests, budget, byBackend, problems };
  });
}

function printTable(rows: readonly Row[], backends: readonly BackendKind[]): void {
  const header = ["operation", "billed", "requests", "budget", "$ per million"];
  const lines = rows.map((row) => [
    row.operation,
    String(row.billed),
    String(row.requests),
    row.budget === undefined ? "—" : String(row.budget),
    (row.billed * DOLLARS_PER_COMMAND * 1_000_000).toFixed(2),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...lines.map((line) => line[column]!.length)),
  );
  const format = (cells: readonly string[]) =>
    cells
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[column]!),
      )
      .join("  ");
  console.log(`billed commands per operation, upstash profile, on ${backends.join(" and ")}:`);
  console.log(format(header));
  for (const line of lines) console.log(format(line));
}

async function main(): Promise<void> {
  const backends: BackendKind[] = ["embedded"];
  if (findRedisServerBinary() !== undefined) backends.push("redis-server");
  else console.log("(no redis-server found: the embedded engine only)");
  const results = new Map<BackendKind, Map<string, Figure[]>>();
  for (const backend of backends) results.set(backend, await measureOn(backend));
  const rows = rowsOf(results);
  printTable(rows, backends);
  // No timestamp: the file changes only when a figure does.
  const json = {
    command: "npm run cost",
    profile: "upstash",
    backends,
    repeats: REPEATS,
    dollarsPerCommand: DOLLARS_PER_COMMAND,
    operations: rows.map(({ operation, billed, requests, budget, byBackend }) => ({
      operation,
      billed,
      requests,
      budget: budget ?? null,
      byBackend,
    })),
  };
  writeFileSync(RESULT_FILE, `${JSON.stringify(json, null, 2)}\n`);
  console.log(`written to ${RESULT_FILE}`);
  const problems = rows.flatMap((row) => row.problems);
  if (problems.length > 0) {
    console.error(`\ncost check failed:\n${problems.map((problem) => `  ${problem}`).join("\n")}`);
    process.exitCode = 1;
  }
}

await main();

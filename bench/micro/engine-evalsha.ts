/**
 * Micro-benchmark: the cost of one lock EVALSHA on the embedded engine, called in-process (no
 * HTTP). It runs the reentrant lock's own scripts (`lock.acquire`, `lock.release`, with the keys
 * and arguments the library sends) in three shapes: a free acquire, its release, and the busy
 * acquire a waiting owner sends while another holds the lock.
 *
 *   npx tsx bench/micro/engine-evalsha.ts [iterations]
 */
import { createEmbeddedBackend } from "../../dev/engine/index.js";
import { CLIENT_DEFAULTS } from "../../src/defaults.js";
import { ACQUIRE } from "../../src/locks/exclusive/acquire.js";
import { RELEASE } from "../../src/locks/exclusive/release.js";
import { lockKeys } from "../../src/locks/keys.js";
import { PACE_TTL_MS } from "../../src/locks/pace.js";
import { PACE_WINDOW_MS } from "../../src/wait/pace.js";

const LEASE_MS = "30000";
const OPERATION_TTL_MS = String(CLIENT_DEFAULTS.operationTtlMs);

async function main(): Promise<void> {
  const iterations = Number(process.argv[2] ?? 20_000);
  const engine = await createEmbeddedBackend();
  const load = async (body: string): Promise<string> => {
    const reply = await engine.command(["script", "load", body]);
    if (reply.type !== "bulk" || reply.value === null) throw new Error("SCRIPT LOAD failed");
    return Buffer.from(reply.value).toString("latin1");
  };
  const acquireSha = await load(ACQUIRE.source);
  const releaseSha = await load(RELEASE.source);
  let operations = 0;
  /** Runs EVALSHA and checks the reply's status (its first element). */
  const evalsha = async (
    sha: string,
    keys: readonly string[],
    args: readonly string[],
    expected: bigint,
  ): Promise<void> => {
    operations += 1;
    const reply = await engine.command(["evalsha", sha, String(keys.length), ...keys, ...args]);
    const status = reply.type === "array" ? reply.value?.[0] : undefined;
    if (status?.type !== "integer" || status.value !== expected) {
      throw new Error(`unexpected reply: ${JSON.stringify(reply, replacer)}`);
    }
  };
  const acquire = (name: string, owner: string, expected: bigint): Promise<void> => {
    const keys = lockKeys("bench", name);
    return evalsha(
      acquireSha,
      [keys.lock, keys.fence, keys.operation(`a${operations}`), keys.holdStats, keys.pollers],
      [owner, LEASE_MS, OPERATION_TTL_MS, String(PACE_TTL_MS), String(PACE_WINDOW_MS)],
      expected,
    );
  };
  const release = (name: string, owner: string): Promise<void> => {
    const keys = lockKeys("bench", name);
    return evalsha(
      releaseSha,
      [keys.lock, keys.operation(`r${operations}`), keys.holdStats],
      [owner, OPERATION_TTL_MS, String(PACE_TTL_MS)],
      1n,
    );
  };

  // Each round on one of 64 names: owner A takes it, B polls it busy, A releases it.
  const round = async (i: number, timings?: bigint[]): Promise<void> => {
    const name = `name-${i % 64}`;
    const t0 = process.hrtime.bigint();
    await acquire(name, "owner-a", 1n);
    const t1 = process.hrtime.bigint();
    await acquire(name, "owner-b", 0n);
    const t2 = process.hrtime.bigint();
    await release(name, "owner-a");
    const t3 = process.hrtime.bigint();
    if (timings) {
      timings[0] = (timings[0] ?? 0n) + (t1 - t0);
      timings[1] = (timings[1] ?? 0n) + (t2 - t1);
      timings[2] = (timings[2] ?? 0n) + (t3 - t2);
    }
  };
  for (let i = 0; i < 2_000; i++) await round(i);
  const timings: bigint[] = [];
  const cpuBefore = process.cpuUsage();
  for (let i = 0; i < iterations; i++) await round(i, timings);
  const cpu = process.cpuUsage(cpuBefore);
  const perOp = (ns: bigint | undefined): string =>
    (Number(ns ?? 0n) / 1000 / iterations).toFixed(1);
  const totalNs = timings.reduce((sum, ns) => sum + ns, 0n);
  console.log(`${iterations} rounds of the reentrant lock's scripts on the embedded engine:`);
  console.log(`  acquire (free)  ${perOp(timings[0])} µs per EVALSHA`);
  console.log(`  acquire (busy)  ${perOp(timings[1])} µs per EVALSHA`);
  console.log(`  release         ${perOp(timings[2])} µs per EVALSHA`);
  console.log(`  mean            ${perOp(totalNs / 3n)} µs per EVALSHA`);
  // CPU time is steadier than wall time on a shared machine (time spent descheduled is left out).
  const cpuUs = (cpu.user + cpu.system) / (iterations * 3);
  console.log(`  mean CPU time   ${cpuUs.toFixed(1)} µs per EVALSHA`);
  await engine.close();
}

function replacer(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return `${value}n`;
  if (value instanceof Uint8Array) return Buffer.from(value).toString("latin1");
  return value;
}

await main();

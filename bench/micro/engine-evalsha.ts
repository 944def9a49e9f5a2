/**
 * Micro-benchmark: the cost of one lock EVALSHA on the embedded engine, called in-process (no
 * HTTP). It runs the reentrant lock's own scripts (`lock.acquire`, `lock.release`), with keys and
 * arguments filled in by the names the scripts declare, in one hand-off round per lock name:
 * A takes the free lock, B polls it busy (and queues), A releases, B takes it, B releases.
 *
 *   npx tsx bench/micro/engine-evalsha.ts [rounds]
 */
import { createEmbeddedBackend } from "../../dev/engine/index.js";
import { CLIENT_DEFAULTS } from "../../src/defaults.js";
import { PACE_TTL_MS } from "../../src/hold/pace.js";
import type { LockScript } from "../../src/hold/script.js";
import { lockKeys } from "../../src/hold/script.js";
import { ACQUIRE } from "../../src/locks/exclusive/lock.js";
import { RELEASE } from "../../src/locks/exclusive/release.js";

/** The kinds of EVALSHA a round sends, in the order they are reported. */
const STEPS = ["acquire (free)", "acquire (busy)", "release", "acquire (its turn)"] as const;
type Step = (typeof STEPS)[number];

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 10_000);
  const engine = await createEmbeddedBackend();
  const shas = new Map<LockScript, string>();
  for (const script of [ACQUIRE, RELEASE]) {
    const reply = await engine.command(["script", "load", script.source]);
    if (reply.type !== "bulk" || reply.value === null) throw new Error("SCRIPT LOAD failed");
    shas.set(script, Buffer.from(reply.value).toString("latin1"));
  }

  let operations = 0;
  /** EVALSHA of `script` for `owner` on lock `name`; checks the reply's status. */
  const run = async (script: LockScript, name: string, owner: string, expected: bigint) => {
    operations += 1;
    const keys = lockKeys("bench", name);
    const keyByName: Record<string, string> = {
      lockKey: keys.lock,
      fenceKey: keys.fence,
      operationKey: keys.operation(String(operations)),
      holdStatsKey: keys.holdStats,
      queueKey: keys.queue,
      timeoutsKey: keys.timeouts,
      parkedKey: keys.parked,
    };
    const argByName: Record<string, string> = {
      owner,
      leaseMs: "30000",
      operationTtlMs: String(CLIENT_DEFAULTS.operationTtlMs),
      paceTtlMs: String(PACE_TTL_MS),
      waiterTimeoutMs: "10000",
      roundTripMs: "2",
      // A polling waiter's attempt, and a release that names no hold and no grant.
      claimMs: "0",
      parkId: "",
      parkBeside: "0",
      wakeBy: "",
      fencingToken: "0",
      grantedWaiter: "",
    };
    const pick = (names: readonly string[], values: Record<string, string>) =>
      names.map((n) => values[n] ?? missing(script, n));
    // Optional keys are left out from the first one this benchmark does not name.
    const firstLeftOut = script.keyNames.findIndex(
      (n) => keyByName[n] === undefined && script.optionalKeys.includes(n),
    );
    const keyList = pick(
      firstLeftOut < 0 ? script.keyNames : script.keyNames.slice(0, firstLeftOut),
      keyByName,
    );
    const args = pick(script.argNames, argByName);
    const sha = shas.get(script) ?? "";
    const reply = await engine.command([
      "evalsha",
      sha,
      String(keyList.length),
      ...keyList,
      ...args,
    ]);
    const status = reply.type === "array" ? reply.value?.[0] : undefined;
    if (status?.type !== "integer" || status.value !== expected) {
      throw new Error(`unexpected reply to ${script.name}: ${JSON.stringify(reply, replacer)}`);
    }
  };

  const totals = new Map<Step, { ns: bigint; count: number }>(
    STEPS.map((step) => [step, { ns: 0n, count: 0 }]),
  );
  const timed = async (measure: boolean, step: Step, call: () => Promise<void>) => {
    const started = process.hrtime.bigint();
    await call();
    if (!measure) return;
    const total = totals.get(step)!;
    total.ns += process.hrtime.bigint() - started;
    total.count += 1;
  };
  const round = async (i: number, measure: boolean): Promise<void> => {
    const name = `name-${i % 64}`;
    await timed(measure, "acquire (free)", () => run(ACQUIRE, name, "owner-a", 1n));
    await timed(measure, "acquire (busy)", () => run(ACQUIRE, name, "owner-b", 0n));
    await timed(measure, "release", () => run(RELEASE, name, "owner-a", 1n));
    await timed(measure, "acquire (its turn)", () => run(ACQUIRE, name, "owner-b", 1n));
    await timed(measure, "release", () => run(RELEASE, name, "owner-b", 1n));
  };

  for (let i = 0; i < 1_000; i++) await round(i, false);
  const cpuBefore = process.cpuUsage();
  for (let i = 0; i < rounds; i++) await round(i, true);
  const cpu = process.cpuUsage(cpuBefore);

  let allNs = 0n;
  let allCount = 0;
  console.log(`${rounds} hand-off rounds of the reentrant lock's scripts on the embedded engine:`);
  for (const [step, { ns, count }] of totals) {
    allNs += ns;
    allCount += count;
    console.log(`  ${step.padEnd(19)} ${(Number(ns) / 1000 / count).toFixed(1)} µs per EVALSHA`);
  }
  console.log(
    `  ${"mean".padEnd(19)} ${(Number(allNs) / 1000 / allCount).toFixed(1)} µs per EVALSHA`,
  );
  // CPU time is steadier than wall time on a shared machine (time spent descheduled is left out).
  const cpuUs = (cpu.user + cpu.system) / allCount;
  console.log(`  ${"mean CPU time".padEnd(19)} ${cpuUs.toFixed(1)} µs per EVALSHA`);
  await engine.close();
}

function missing(script: LockScript, name: string): never {
  throw new Error(`the benchmark has no value for ${script.name}'s ${name}: update it`);
}

function replacer(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return `${value}n`;
  if (value instanceof Uint8Array) return Buffer.from(value).toString("latin1");
  return value;
}

await main();

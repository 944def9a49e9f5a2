/**
 * Where the billed commands of a contended run go: N contenders × K sections of one lock on the
 * local server (`upstash` profile, redis-server behind it), then the billed commands per
 * acquisition (the server's own count) and, from redis-server's `INFO commandstats`, every
 * command the scripts ran, by name, per acquisition. Needs `redis-server` on the PATH. The
 * semaphore has 2 permits, each contender asking one.
 *
 *   npx tsx bench/micro/contended-commands.ts [--kind lock|fair|write|semaphore] [--n 8] [--k 10]
 *     [--hold 5] [--mode auto|poll] [--operation-ttl 60000]
 *
 * A run shorter than the clients' `operationTtlMs` (60 s by default) never sees a record of it
 * expire; a lower `--operation-ttl` (at least 10 000) and more sections show the steady state of a
 * lock contended for longer (e.g. `--k 150 --operation-ttl 10000`).
 *
 * `info`, `multi` and `exec` are the server's own metering around each script, not billed.
 */
import { parseArgs } from "node:util";
import { Redis } from "@upstash/redis";
import { startDevServer } from "../../dev/index.js";
import { LockClient } from "../../src/index.js";
import { sleep } from "../../src/platform.js";
import { STREAM_LINGER_MS } from "../../src/wait/push/client-state.js";

const { values } = parseArgs({
  options: {
    kind: { type: "string", default: "lock" },
    n: { type: "string", default: "8" },
    k: { type: "string", default: "10" },
    hold: { type: "string", default: "5" },
    mode: { type: "string", default: "auto" },
    "operation-ttl": { type: "string", default: "60000" },
  },
});
const contenders = Number(values.n);
const sections = Number(values.k);
const holdMs = Number(values.hold);
const mode = values.mode === "poll" ? "poll" : "auto";

const server = await startDevServer({ backend: "redis-server", profile: "upstash" });
const raw = new Redis({ url: server.url, token: server.token, enableTelemetry: false });
const commandStats = async (): Promise<Map<string, number>> => {
  const info = String(await raw.exec(["INFO", "commandstats"]));
  return new Map(
    [...info.matchAll(/cmdstat_(\w+):calls=(\d+)/g)].map((m) => [m[1]!, Number(m[2])]),
  );
};

const before = await commandStats();
server.stats.reset();
await Promise.all(
  Array.from({ length: contenders }, async () => {
    const client = new LockClient({
      redis: new Redis({ url: server.url, token: server.token, enableTelemetry: false }),
      wait: { mode },
      operationTtlMs: Number(values["operation-ttl"]),
    });
    const lock =
      values.kind === "fair"
        ? client.fairLock("contended")
        : values.kind === "write"
          ? client.readWriteLock("contended").writeLock()
          : values.kind === "semaphore"
            ? client.semaphore("contended", { initialPermits: 2 })
            : client.lock("contended");
    for (let i = 0; i < sections; i++) {
      const held = await lock.acquire({ leaseMs: 10_000, waitMs: 60_000 });
      await sleep(holdMs);
      await held.release();
    }
  }),
);
const stats = server.stats.snapshot();
const after = await commandStats();
// The clients' streams end STREAM_LINGER_MS after their last waiter; closing the server under
// them would fail them ("Stream reading error" from @upstash/redis).
await sleep(STREAM_LINGER_MS + 250);
await server.close();

const acquisitions = contenders * sections;
const per = (value: number) => (value / acquisitions).toFixed(2);
console.log(
  `${values.kind}, N = ${contenders} × K = ${sections}, ${holdMs} ms holds, wait.mode ${mode}: ` +
    `${per(stats.billedCommands)} billed commands and ${per(stats.requests)} requests per acquisition`,
);
const ran = [...after]
  .map(([name, calls]) => [name, calls - (before.get(name) ?? 0)] as const)
  .filter(([, calls]) => calls > 0)
  .sort((a, b) => b[1] - a[1]);
for (const [name, calls] of ran) console.log(`  ${name.padEnd(16)} ${per(calls).padStart(6)}`);
process.exit(0);

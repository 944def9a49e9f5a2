/**
 * edgelock's main demo: a webhook receiver on Workers, run locally, under a burst of concurrent
 * and duplicate signed deliveries. It starts the local Upstash-compatible REST server (REDIS_URL,
 * else a redis-server it spawns, else the embedded engine), runs examples/webhook-worker in
 * workerd through wrangler, fires the burst, and checks that every event was processed exactly
 * once and every duplicate got the same answer.
 *
 *   npm run demo
 *   npm run demo -- --events 400 --customers 20 --copies 3 --concurrency 32 --work-ms 10
 *
 * Exits 1 if exactly-once failed.
 */
import { parseArgs } from "node:util";
import { Redis } from "@upstash/redis";
import { startDevServer } from "../../dev/index.js";
import { progressBar } from "../../dev/progress.js";
import { type BurstOptions, deliveryCount, runBurst } from "./demo/burst.js";
import { startLocalWorker } from "./demo/local-worker.js";
import { judge } from "./demo/verdict.js";

const { values } = parseArgs({
  options: {
    events: { type: "string", default: "60" },
    customers: { type: "string", default: "8" },
    copies: { type: "string", default: "2" },
    concurrency: { type: "string", default: "16" },
    "work-ms": { type: "string", default: "25" },
  },
});
const positive = (name: keyof typeof values) => {
  const value = Number(values[name]);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--${name} must be a whole number ≥ 1`);
  return value;
};
const options: BurstOptions = {
  events: positive("events"),
  customers: positive("customers"),
  copies: positive("copies"),
  concurrency: positive("concurrency"),
  runId: Date.now().toString(36),
};
const workMs = positive("work-ms");
const secret = `whsec_demo_${options.runId}`;

const server = await startDevServer();
let exitCode = 1;
try {
  console.log("edgelock demo — exactly-once webhooks on Workers");
  console.log(`Redis:  ${server.backendDescription}, behind the local REST server ${server.url}`);
  const worker = await startLocalWorker({
    redisUrl: server.url,
    redisToken: server.token,
    webhookSecret: secret,
    workMs,
  });
  try {
    console.log(`Worker: examples/webhook-worker in workerd (wrangler) at ${worker.url.origin}`);
    console.log(
      `Burst:  ${options.events} events of ${options.customers} customers, each delivered ` +
        `${options.copies}× at once and once more later; ${options.concurrency} in flight; ` +
        `${workMs} ms of work per event\n`,
    );
    // Warm-up: the first request loads the Worker's module and its Redis client.
    await (await fetch(new URL("/customers/warm-up", worker.url))).text();
    server.stats.reset();
    const total = deliveryCount(options);
    const progress = progressBar("deliveries", total);
    let delivered = 0;
    const started = Date.now();
    const burst = await runBurst(worker.url, secret, options, () => progress.update(++delivered));
    progress.finish();
    const elapsedMs = Date.now() - started;
    const stats = server.stats.snapshot();

    const verdict = await judge(burst, new Redis({ url: server.url, token: server.token }));
    const results = burst.results;
    const sends = results.reduce((sum, r) => sum + 1 + r.conflicts, 0);
    const waits = results
      .map((r) => r.lockWaitedMs)
      .filter((ms): ms is number => ms !== null)
      .sort((a, b) => a - b);
    const waited = waits.filter((ms) => ms >= 10);
    const pct = (p: number) => waits[Math.min(waits.length - 1, Math.floor(p * waits.length))] ?? 0;
    // The example's own ledger sends 3 commands per processed event (read, fenced write, count).
    const ledgerCommands = 3 * verdict.processedOnce + 3 * verdict.processedTwice;
    const rows: [string, string][] = [
      ["events", String(options.events)],
      ["deliveries (duplicates, redeliveries, forged, conflicting)", String(results.length)],
      ["HTTP requests to the Worker (with re-sends after 409)", String(sends)],
      ["processed exactly once", `${verdict.processedOnce} / ${options.events}`],
      ["processed more than once / never", `${verdict.processedTwice} / ${verdict.neverProcessed}`],
      [
        "duplicates answered with the stored response (replays)",
        String(results.filter((r) => r.replayed).length),
      ],
      ["409 Conflict (duplicate in progress, re-sent later)", String(sends - results.length)],
      [
        "422 (same event id, other payload) / 401 (bad signature)",
        `${results.filter((r) => r.status === 422).length} / ${results.filter((r) => r.status === 401).length}`,
      ],
      [
        "customer lock waits (≥ 10 ms) / p50 / max wait (ms)",
        `${waited.length} / ${pct(0.5)} / ${waits.at(-1) ?? 0}`,
      ],
      [
        "customer balances correct",
        verdict.wrongBalances === 0 ? "yes" : `NO (${verdict.wrongBalances} wrong)`,
      ],
      ["Redis HTTP requests per delivery", (stats.requests / sends).toFixed(2)],
      [
        "Redis commands per delivery (edgelock / example ledger)",
        `${((stats.commands - ledgerCommands) / sends).toFixed(2)} / ${(ledgerCommands / sends).toFixed(2)}`,
      ],
      ["elapsed (ms)", String(elapsedMs)],
    ];
    console.log();
    for (const [name, value] of rows) console.log(`${name.padEnd(60)} ${value}`);
    console.log();
    if (verdict.ok) {
      console.log("OK: every event processed exactly once; every duplicate got the first answer.");
      exitCode = 0;
    } else {
      console.error("FAILED: exactly-once broke.", verdict);
    }
  } finally {
    await worker.close();
  }
} finally {
  await server.close();
}
process.exit(exitCode);

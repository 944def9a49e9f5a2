/**
 * Issue 32's "wrangler dev stalls", tried as a new user would: the local REST server (dev/,
 * `upstash` profile by default), worker.ts under `wrangler dev` beside it, and `--runs` runs of
 * `--concurrency` concurrent POSTs (Node fetch + Promise.all) incrementing one counter per run
 * under one lock. Per run it prints the answers by status, whether the counter is exact, the
 * slowest request, and the requests that took longer than waitMs + 5 s ("stalled"); a run still
 * going at waitMs + 6 s (and at 60, 120, 240 s) has the Worker's /debug (every request in flight,
 * its Redis calls, pending ones marked) written beside the results. Exits 1 if any request stalled.
 *
 *   npx tsx scripts/stall-repro/run.ts [--runs 60] [--concurrency 150] [--mode push|poll]
 *     [--route inc|plain] [--wait 30000] [--hold 0] [--profile upstash|redis]
 *     [--backend auto|embedded] [--port 8790] [--redis-port 8091] [--out PREFIX]
 *
 * `--route inc` is hono's withLock() (an owner scope per request), `plain` the lock's
 * acquire()/release() outside any scope; `--hold` sleeps between the GET and the SET, so that with
 * a short `--wait` the later requests give up (409) and the give-up path runs too. Results: one
 * JSON line per run (every request's start, end, status and trace) in `<PREFIX>.jsonl`, wrangler's
 * output in `<PREFIX>.wrangler.log` (PREFIX defaults to a new directory under the OS's temp dir).
 */
import { spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "@upstash/redis";
import { startDevServer } from "../../dev/index.js";

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? (process.argv[at + 1] ?? fallback) : fallback;
}

const runs = Number(option("runs", "60"));
const concurrency = Number(option("concurrency", "150"));
const mode = option("mode", "push");
const route = option("route", "inc");
const waitMs = Number(option("wait", "30000"));
const holdMs = Number(option("hold", "0"));
const profile = option("profile", "upstash") as "upstash" | "redis";
const backend = option("backend", "auto") as "auto" | "embedded";
const port = Number(option("port", "8790"));
const out = option("out", join(mkdtempSync(join(tmpdir(), "edgelock-stall-")), "run"));
const STALLED_MS = waitMs + 5_000;

const server = await startDevServer({
  profile,
  backend,
  port: Number(option("redis-port", "8091")),
});
const wranglerBin = join(
  dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
  "bin",
  "wrangler.js",
);
const child = spawn(
  process.execPath,
  [
    wranglerBin,
    "dev",
    "--config",
    fileURLToPath(new URL("./wrangler.toml", import.meta.url)),
    "--port",
    String(port),
    "--ip",
    "127.0.0.1",
    "--var",
    `UPSTASH_REDIS_REST_URL:${server.url}`,
    "--var",
    `UPSTASH_REDIS_REST_TOKEN:${server.token}`,
  ],
  {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
  },
);
child.stdout.on("data", (chunk) => appendFileSync(`${out}.wrangler.log`, chunk));
child.stderr.on("data", (chunk) => appendFileSync(`${out}.wrangler.log`, chunk));
const base = `http://127.0.0.1:${port}`;
async function stop(code: number): Promise<never> {
  child.kill("SIGINT");
  await server.close();
  process.exit(code);
}
process.on("SIGINT", () => void stop(130));

for (let tries = 0; ; tries++) {
  try {
    if ((await fetch(`${base}/debug`)).ok) break;
  } catch {}
  if (tries > 120) {
    console.error(`wrangler dev did not answer; see ${out}.wrangler.log`);
    await stop(1);
  }
  await new Promise((resolve) => setTimeout(resolve, 500));
}
const redis = new Redis({ url: server.url, token: server.token });
const path = (name: string, id: string) =>
  `${base}/${route}/${mode}/${name}?id=${id}&wait=${waitMs}&hold=${holdMs}`;
await (await fetch(path("warm-up", "warm-up"), { method: "POST" })).text();

interface Sent {
  readonly i: number;
  readonly start: number;
  readonly end: number;
  readonly status: number;
  readonly trace?: unknown;
  readonly error?: string;
}

let stalled = 0;
let runsWithStalls = 0;
for (let run = 1; run <= runs; run++) {
  const name = `run${run}-${Date.now()}`;
  const t0 = Date.now();
  const sent: Sent[] = [];
  let done = false;
  const marks = [waitMs + 6_000, 60_000, 120_000, 240_000].filter((mark) => mark > waitMs);
  const watcher = (async () => {
    for (const mark of marks) {
      while (!done && Date.now() - t0 < mark) await new Promise((r) => setTimeout(r, 250));
      if (done) return;
      try {
        const debug = (await (
          await fetch(`${base}/debug`, { signal: AbortSignal.timeout(10_000) })
        ).json()) as unknown[];
        writeFileSync(`${out}.run${run}.at${mark}.json`, JSON.stringify(debug, null, 1));
        console.log(`  run ${run}: ${debug.length} in flight at ${mark} ms (written)`);
      } catch (error) {
        console.log(`  run ${run}: /debug failed at ${mark} ms: ${(error as Error).message}`);
      }
    }
  })();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      const start = Date.now() - t0;
      try {
        const response = await fetch(path(name, `${run}-${i}`), { method: "POST" });
        await response.arrayBuffer();
        const trace = response.headers.get("x-trace");
        sent.push({
          i,
          start,
          end: Date.now() - t0,
          status: response.status,
          ...(trace === null ? {} : { trace: JSON.parse(trace) }),
        });
      } catch (error) {
        sent.push({ i, start, end: Date.now() - t0, status: 0, error: (error as Error).message });
      }
    }),
  );
  done = true;
  await watcher;
  const counter = Number((await redis.get(`stall:value:${name}`)) ?? 0);
  const statuses: Record<number, number> = {};
  for (const { status } of sent) statuses[status] = (statuses[status] ?? 0) + 1;
  const ok = statuses[200] ?? 0;
  const slow = sent.filter((s) => s.end - s.start > STALLED_MS).map((s) => s.end - s.start);
  stalled += slow.length;
  if (slow.length > 0) runsWithStalls += 1;
  const slowest = Math.max(...sent.map((s) => s.end - s.start));
  appendFileSync(`${out}.jsonl`, `${JSON.stringify({ run, name, counter, statuses, sent })}\n`);
  console.log(
    `run ${run}: ${Date.now() - t0} ms, ${JSON.stringify(statuses)}, counter ${counter}/${ok} ` +
      `${counter === ok ? "exact" : "OFF"}, slowest ${slowest} ms, over ${STALLED_MS} ms: ` +
      `${slow.length}${slow.length > 0 ? ` (${slow.join(", ")} ms)` : ""}`,
  );
}
console.log(
  `${runs} runs of ${concurrency} (${route}, ${mode}, ${profile}, waitMs ${waitMs}, hold ` +
    `${holdMs}): ${stalled} requests over ${STALLED_MS} ms in ${runsWithStalls} runs; ${out}.jsonl`,
);
await stop(stalled > 0 ? 1 : 0);

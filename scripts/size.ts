/**
 * What edgelock adds to a Worker bundle, per entry point: a tiny Worker importing only that
 * entry (or only `client.lock()`) is bundled and minified with esbuild, and the bytes that come
 * from edgelock's own files are measured, minified and gzipped. `@upstash/redis` and `hono` are
 * the user's own dependencies and stay out of the figures.
 *
 * Usage: npx tsx scripts/size.ts           check every figure against its limit
 *        npx tsx scripts/size.ts --write   also rewrite the table in docs/size.md
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { REPO_ROOT } from "./packed-project.js";

interface Case {
  readonly name: string;
  /** The Worker's source; it imports edgelock by its package specifiers. */
  readonly worker: string;
  /** Bytes of edgelock code, min+gz, that this case may not exceed (today's figure + ~5 %). */
  readonly limitBytes: number;
}

/** The plain-lock Worker: `client.lock(name)`, acquire, release; nothing else. */
const PLAIN_LOCK_WORKER = (specifier: string) => `import { ${
  specifier === "edgelock/lock" ? "PlainLockClient as LockClient" : "LockClient"
} } from "${specifier}";
export default { async fetch(_request, env) {
  const client = new LockClient({ redis: env.REDIS });
  const held = await client.lock("a").acquire({ leaseMs: 5000 });
  await held.release();
  return new Response("ok");
} };`;

const CASES: readonly Case[] = [
  {
    name: "`edgelock/lock`: `client.lock()` only",
    worker: PLAIN_LOCK_WORKER("edgelock/lock"),
    limitBytes: 24_000,
  },
  {
    name: "`edgelock`: `client.lock()` only",
    worker: PLAIN_LOCK_WORKER("edgelock"),
    limitBytes: 36_500,
  },
  { name: "`edgelock` (everything)", worker: `export * from "edgelock";`, limitBytes: 40_400 },
  {
    name: "`edgelock/hono` (`withLock` + `idempotency`)",
    worker: `export { withLock, idempotency } from "edgelock/hono";`,
    limitBytes: 28_400,
  },
  {
    name: "`edgelock/durable-object` (`LockWatchdog` + `durableObjectWatchdog`)",
    worker: `export { LockWatchdog, durableObjectWatchdog } from "edgelock/durable-object";`,
    limitBytes: 12_500,
  },
  {
    name: "`edgelock/inspector` (`inspector` + `inspectorHandler`, the page included)",
    worker: `export { inspector, inspectorHandler } from "edgelock/inspector";`,
    limitBytes: 21_500,
  },
  {
    name: "`edgelock/metrics` (`recordMetrics` + both sinks)",
    worker: `export { recordMetrics, analyticsEngineSink, openTelemetrySink } from "edgelock/metrics";`,
    limitBytes: 1_400,
  },
];

const ENTRY_SOURCES: Record<string, string> = {
  edgelock: "src/index.ts",
  "edgelock/lock": "src/lock.ts",
  "edgelock/hono": "src/hono/index.ts",
  "edgelock/durable-object": "src/durable-object/index.ts",
  "edgelock/inspector": "src/inspector/index.ts",
  "edgelock/metrics": "src/metrics/index.ts",
};

export interface SizeFigure {
  readonly name: string;
  /** edgelock's share of the minified bundle, in bytes. */
  readonly minifiedBytes: number;
  /** That share gzipped on its own (an upper bound of what it adds to the gzipped bundle). */
  readonly gzippedBytes: number;
  readonly limitBytes: number;
}

async function measure(testCase: Case): Promise<SizeFigure> {
  const result = await build({
    stdin: { contents: testCase.worker, loader: "js", resolveDir: REPO_ROOT },
    bundle: true,
    minify: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    write: false,
    metafile: true,
    alias: Object.fromEntries(
      Object.entries(ENTRY_SOURCES).map(([specifier, file]) => [specifier, join(REPO_ROOT, file)]),
    ),
    external: ["@upstash/redis", "@upstash/redis/*", "hono", "hono/*", "cloudflare:*", "node:*"],
    logLevel: "silent",
  });
  const output = result.outputFiles[0]?.text ?? "";
  const meta = Object.values(result.metafile.outputs)[0];
  const fromEdgelock = Object.entries(meta?.inputs ?? {})
    .filter(([file]) => file.startsWith("src/"))
    .reduce((sum, [, input]) => sum + input.bytesInOutput, 0);
  // gzip edgelock's share: the whole bundle scaled by that share (the externals are not in it).
  const share = output.length === 0 ? 0 : fromEdgelock / output.length;
  const gzippedBytes = Math.round(gzipSync(output, { level: 9 }).byteLength * share);
  return {
    name: testCase.name,
    minifiedBytes: fromEdgelock,
    gzippedBytes,
    limitBytes: testCase.limitBytes,
  };
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

export function sizeTable(figures: readonly SizeFigure[]): string {
  const rows = figures.map(
    (figure) =>
      `| ${figure.name} | ${kib(figure.minifiedBytes)} | ${kib(figure.gzippedBytes)} | ${kib(figure.limitBytes)} |`,
  );
  return [
    "| A Worker that imports | edgelock, minified | edgelock, min+gz | CI limit (min+gz) |",
    "| --- | ---: | ---: | ---: |",
    ...rows,
  ].join("\n");
}

const TABLE_START = "<!-- size-table:start -->";
const TABLE_END = "<!-- size-table:end -->";

async function main(): Promise<number> {
  const figures: SizeFigure[] = [];
  for (const testCase of CASES) figures.push(await measure(testCase));
  const table = sizeTable(figures);
  console.log(table);
  if (process.argv.includes("--write")) {
    const path = join(REPO_ROOT, "docs", "size.md");
    const doc = readFileSync(path, "utf8");
    const start = doc.indexOf(TABLE_START);
    const end = doc.indexOf(TABLE_END);
    if (start < 0 || end < start)
      throw new Error(`docs/size.md lacks ${TABLE_START} … ${TABLE_END}`);
    writeFileSync(path, `${doc.slice(0, start + TABLE_START.length)}\n${table}\n${doc.slice(end)}`);
  }
  const over = figures.filter((figure) => figure.gzippedBytes > figure.limitBytes);
  for (const figure of over) {
    console.error(
      `over the limit: ${figure.name}: ${figure.gzippedBytes} B > ${figure.limitBytes} B`,
    );
  }
  return over.length === 0 ? 0 : 1;
}

if (import.meta.filename === process.argv[1]) process.exitCode = await main();

/**
 * What one inspector refresh costs, in commands (Upstash bills each), for a database of 10,
 * 1 000 and 100 000 keys: the local REST server is filled, 2 locks are held (one with a
 * waiter), and one refresh is counted by the server's own stats (its SCAN, EVALSHA_RO and
 * EVAL_RO commands; the waiter's own polls are not the inspector's).
 *
 * Usage: npm run bench:inspector -- [--backend embedded|redis-server]
 *   Two fills: the keys are the app's own (not edgelock's), or idle edgelock locks (fences).
 */
import { parseArgs } from "node:util";
import { Redis } from "@upstash/redis";
import { type DevServer, startDevServer } from "../dev/index.js";
import { LockClient } from "../src/index.js";
import { inspectorHandler } from "../src/inspector/index.js";
import type { InspectorSnapshot } from "../src/inspector/types.js";

const HELD = 2;

async function fill(redis: Redis, count: number, key: (i: number) => string): Promise<void> {
  for (let start = 0; start < count; start += 1_000) {
    const batch: Record<string, string> = {};
    for (let i = start; i < Math.min(count, start + 1_000); i += 1) batch[key(i)] = "1";
    await redis.mset(batch);
  }
}

const INSPECTOR_COMMANDS = ["scan", "evalsha_ro", "eval_ro"];

function inspectorCommands(server: DevServer): number {
  const byName = server.stats.snapshot().commandsByName;
  return INSPECTOR_COMMANDS.reduce((sum, name) => sum + (byName[name] ?? 0), 0);
}

async function measure(
  server: DevServer,
  size: number,
  fillKind: "app" | "idle locks",
  scanCount: number,
) {
  const redis = new Redis({ url: server.url, token: server.token });
  await redis.flushdb();
  const client = new LockClient({ redis });
  const handles = [];
  for (let i = 0; i < HELD; i += 1)
    handles.push(await client.lock(`held-${i}`).acquire({ leaseMs: 60_000 }));
  const waiter = client
    .lock("held-0")
    .acquire({ waitMs: 120_000 })
    .catch(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, 200));
  const existing = await redis.dbsize();
  const rest = Math.max(0, size - existing);
  await fill(
    redis,
    rest,
    fillKind === "app" ? (i) => `app:${i}` : (i) => `edgelock:{idle-${i}}:fence`,
  );
  const keys = await redis.dbsize();

  const handle = inspectorHandler({ client, access: () => "read", scanCount });
  const refresh = async () => {
    const before = inspectorCommands(server);
    const response = await handle(new Request("http://127.0.0.1/_edgelock/api/snapshot"));
    const body = (await response.json()) as InspectorSnapshot;
    return { body, counted: inspectorCommands(server) - before };
  };
  await refresh(); // the first refresh sends the script's text once (EVAL_RO); later ones its SHA-1
  const { body, counted } = await refresh();
  await client.lock("held-0").forceRelease();
  await waiter;
  for (const held of handles) await held.release().catch(() => undefined);
  return { keys, body, counted };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { backend: { type: "string" } } });
  const backend = (values.backend ?? "embedded") as "embedded" | "redis-server";
  const server = await startDevServer({ backend, inspector: false });
  try {
    console.log(
      `backend: ${server.backendDescription}; at most 10 SCANs and 50 lock reads per refresh`,
    );
    console.log(
      "| keys in the database | besides 2 held locks and 1 waiter | SCAN COUNT | commands per refresh (server count) | SCAN | lock reads | edgelock keys seen | walk complete |",
    );
    console.log("| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |");
    for (const fillKind of ["app", "idle locks"] as const) {
      for (const [size, scanCount] of [
        [10, 1_000],
        [1_000, 1_000],
        [100_000, 1_000],
        [100_000, 10_000],
      ] as const) {
        const { keys, body, counted } = await measure(server, size, fillKind, scanCount);
        const of = fillKind === "app" ? "the app's own keys" : "idle edgelock locks (fences)";
        const walk = body.scan.complete ? "yes" : `no (goes on from cursor ${body.scan.cursor})`;
        console.log(
          `| ${keys} | ${of} | ${scanCount} | ${counted} | ${body.cost.scan} | ${body.cost.read} | ${body.scan.keysSeen} | ${walk} |`,
        );
      }
    }
  } finally {
    await server.close();
  }
}

await main();

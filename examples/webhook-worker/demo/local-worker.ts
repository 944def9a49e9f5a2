/**
 * Runs the example Worker locally in workerd through wrangler's programmatic API (the same
 * bundler and runtime as `wrangler dev`), with the REST server's URL and token as bindings.
 */
import { fileURLToPath } from "node:url";
import { unstable_startWorker } from "wrangler";

export interface LocalWorker {
  readonly url: URL;
  close(): Promise<void>;
}

export interface LocalWorkerOptions {
  redisUrl: string;
  redisToken: string;
  webhookSecret: string;
  workMs: number;
}

const CONFIG = fileURLToPath(new URL("../wrangler.toml", import.meta.url));

export async function startLocalWorker(options: LocalWorkerOptions): Promise<LocalWorker> {
  // Offline by default: no download of the Request.cf placeholder, no telemetry.
  process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";
  process.env.WRANGLER_SEND_METRICS ??= "false";
  const text = (value: string) => ({ type: "plain_text" as const, value });
  const worker = await unstable_startWorker({
    config: CONFIG,
    bindings: {
      UPSTASH_REDIS_REST_URL: text(options.redisUrl),
      UPSTASH_REDIS_REST_TOKEN: text(options.redisToken),
      WEBHOOK_SECRET: text(options.webhookSecret),
      WORK_MS: text(String(options.workMs)),
    },
    dev: {
      server: { hostname: "127.0.0.1", port: 0 },
      inspector: false,
      watch: false,
      logLevel: "warn",
    },
  });
  await worker.ready;
  return { url: await worker.url, close: () => worker.dispose() };
}

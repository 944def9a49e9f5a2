/**
 * Starts the bench's Worker in workerd through wrangler's programmatic API (the bundler and
 * runtime of `wrangler dev`), with the bench backend's REST URL and token as bindings.
 */
import { fileURLToPath } from "node:url";
import { unstable_startWorker } from "wrangler";

export interface BenchWorker {
  readonly url: URL;
  close(): Promise<void>;
}

const CONFIG = fileURLToPath(new URL("./wrangler.toml", import.meta.url));

export async function startBenchWorker(restUrl: string, token: string): Promise<BenchWorker> {
  // Offline: no download of the Request.cf placeholder, no telemetry.
  process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";
  process.env.WRANGLER_SEND_METRICS ??= "false";
  const text = (value: string) => ({ type: "plain_text" as const, value });
  const worker = await unstable_startWorker({
    config: CONFIG,
    bindings: {
      UPSTASH_REDIS_REST_URL: text(restUrl),
      UPSTASH_REDIS_REST_TOKEN: text(token),
    },
    dev: {
      server: { hostname: "127.0.0.1", port: 0 },
      inspector: false,
      watch: false,
      logLevel: "warn",
    },
  });
  try {
    await worker.ready;
    return { url: await worker.url, close: () => worker.dispose() };
  } catch (error) {
    await worker.dispose();
    throw error;
  }
}

/**
 * `npm run dev`: the webhook example under `wrangler dev` (http://localhost:8787), with the local
 * REST server beside it (http://127.0.0.1:8079). Send it webhooks by hand with send.ts:
 *
 *   npx tsx examples/webhook-worker/send.ts --customer cus_1 --amount 500 --times 3
 *
 * Ctrl-C stops both.
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startDevServer } from "../../dev/index.js";
import { DEV_SECRET } from "./dev-secret.js";

const config = fileURLToPath(new URL("./wrangler.toml", import.meta.url));
const wranglerBin = join(
  dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
  "bin",
  "wrangler.js",
);

const server = await startDevServer({ port: 8079, log: (line) => console.log(`[redis] ${line}`) });
const child = spawn(
  process.execPath,
  [
    wranglerBin,
    "dev",
    "--config",
    config,
    "--var",
    `UPSTASH_REDIS_REST_URL:${server.url}`,
    "--var",
    `UPSTASH_REDIS_REST_TOKEN:${server.token}`,
    "--var",
    `WEBHOOK_SECRET:${process.env.WEBHOOK_SECRET ?? DEV_SECRET}`,
  ],
  {
    stdio: "inherit",
    env: { CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false", ...process.env },
  },
);
console.log(
  "[dev] sending a webhook: npx tsx examples/webhook-worker/send.ts --customer cus_1 --amount 500",
);

let stopping = false;
const stop = async (code: number) => {
  if (stopping) return;
  stopping = true;
  child.kill("SIGINT");
  await server.close();
  process.exit(code);
};
process.on("SIGINT", () => void stop(0));
process.on("SIGTERM", () => void stop(0));
child.on("exit", (code) => void stop(code ?? 0));

/**
 * Runs the suite inside workerd through wrangler's programmatic API (the bundler and runtime of
 * `wrangler dev`), entry-worker.mjs resolved from the scratch project's node_modules.
 * Usage: node host-workerd.mjs WRANGLER_MODULE URL TOKEN PREFIX DATE [FLAG,...]
 */
import { fileURLToPath, pathToFileURL } from "node:url";

const [modulePath, url, token, prefix, date, flags] = process.argv.slice(2);
// Offline: no download of the Request.cf placeholder, no telemetry.
process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";
const { unstable_startWorker } = await import(pathToFileURL(modulePath).href);
const text = (value) => ({ type: "plain_text", value });
const worker = await unstable_startWorker({
  name: "conformance",
  entrypoint: fileURLToPath(new URL("./entry-worker.mjs", import.meta.url)),
  compatibilityDate: date,
  compatibilityFlags: flags ? flags.split(",") : [],
  bindings: { UPSTASH_REDIS_REST_URL: text(url), UPSTASH_REDIS_REST_TOKEN: text(token) },
  dev: {
    server: { hostname: "127.0.0.1", port: 0 },
    inspector: false,
    watch: false,
    logLevel: "warn",
  },
});
try {
  await worker.ready;
  const res = await fetch(new URL(`/?prefix=${encodeURIComponent(prefix)}`, await worker.url));
  const body = await res.text();
  if (res.status !== 200) throw new Error(`the Worker answered ${res.status}: ${body}`);
  console.log(`CONFORMANCE_ROWS ${body}`);
} finally {
  await worker.dispose();
}

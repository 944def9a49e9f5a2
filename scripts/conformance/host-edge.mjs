/**
 * Runs the bundled suite in Vercel's Edge runtime VM (the `edge-runtime` package Vercel's CLI
 * runs Edge Functions in locally). With --async-hooks the context also gets the global
 * AsyncLocalStorage, as a deployed function gets it with one line from `node:async_hooks`.
 * Usage: node host-edge.mjs EDGE_RUNTIME_MODULE BUNDLE URL TOKEN PREFIX [--async-hooks]
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [modulePath, bundle, url, token, prefix, flag] = process.argv.slice(2);
const { EdgeRuntime } = await import(pathToFileURL(modulePath).href);
const runtime = new EdgeRuntime({
  extend: (context) => {
    if (flag === "--async-hooks") context.AsyncLocalStorage = AsyncLocalStorage;
    return context;
  },
});
runtime.evaluate(readFileSync(bundle, "utf8"));
const rows = await runtime.evaluate(
  `globalThis.conformance(${JSON.stringify(url)}, ${JSON.stringify(token)}, ${JSON.stringify(prefix)})`,
);
console.log(`CONFORMANCE_ROWS ${JSON.stringify(rows)}`);

/**
 * The suite in Vercel's Edge runtime, bundled (as Vercel bundles a function) into a script the
 * edge-runtime VM evaluates: `globalThis.conformance(url, token, prefix)` resolves with the rows.
 */
import { Redis } from "@upstash/redis";
import { runConformance } from "./suite.mjs";

globalThis.conformance = (url, token, prefix) =>
  runConformance({ redis: new Redis({ url, token }), prefix });

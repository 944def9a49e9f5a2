/**
 * The suite under Node, Bun and Deno: as a user's script, `Redis.fromEnv()` (so Deno's
 * `--allow-env` list is the one @upstash/redis needs). Usage: <runtime> entry-node.mjs PREFIX
 */
import { Redis } from "@upstash/redis";
import { runConformance } from "./suite.mjs";

const rows = await runConformance({ redis: Redis.fromEnv(), prefix: process.argv.at(-1) });
console.log(`CONFORMANCE_ROWS ${JSON.stringify(rows)}`);

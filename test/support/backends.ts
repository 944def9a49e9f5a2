/**
 * Which backends the suites run against, and a vitest helper that starts a dev server per file.
 *
 * - A real redis-server whenever the binary exists (PATH or REDIS_SERVER_BIN).
 * - The embedded engine whenever its module exists.
 * - In CI (`CI=true`) a missing redis-server is an error: CI must test against real Redis.
 */
import { afterAll, beforeAll } from "vitest";
import { type DevServer, type DevServerOptions, startDevServer } from "../../dev/index.js";
import type { BackendKindUnderTest } from "./backend-kinds.js";
import { recordScriptCensus } from "./script-census.js";

export {
  type BackendKindUnderTest,
  backendKindsUnderTest,
  hasEmbeddedEngine,
  hasRedisServer,
  redisServerUnderTest,
} from "./backend-kinds.js";

/**
 * Starts a dev server on `kind` before the file's tests and closes it after them. Returns a getter
 * (the server only exists once beforeAll has run).
 */
export function withDevServer(
  kind: BackendKindUnderTest,
  options: Omit<DevServerOptions, "backend"> = {},
): () => DevServer {
  let server: DevServer | undefined;
  let source = "a node test";
  // biome-ignore lint/correctness/noEmptyPattern: vitest reads fixtures from the first argument
  beforeAll(async ({}, suite) => {
    source = suite.file.filepath;
    server = await startDevServer({ ...options, backend: kind });
  });
  afterAll(async () => {
    if (server) recordScriptCensus(source, server, server.stats.snapshot().scripts);
    await server?.close();
    server = undefined;
  });
  return () => {
    if (server === undefined)
      throw new Error("the dev server is not running (use it inside a test)");
    return server;
  };
}

/**
 * `backendTimeoutMs` for clients of a server that drops a third of its answers: the budget of one
 * call must cover @upstash/redis's own re-sends (exponential, ~4.3 s for five) and edgelock's,
 * or a run of drops ends the call in LockBackendError (the default 2 s is for failing fast).
 */
export const LOSSY_BACKEND_TIMEOUT_MS = 20_000;

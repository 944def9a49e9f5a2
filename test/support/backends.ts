/**
 * Which backends the suites run against, and a vitest helper that starts a dev server per file.
 *
 * - A real redis-server whenever the binary exists (PATH or REDIS_SERVER_BIN).
 * - The embedded engine whenever its module exists.
 * - In CI (`CI=true`) a missing redis-server is an error: CI must test against real Redis.
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll } from "vitest";
import { type DevServer, type DevServerOptions, startDevServer } from "../../dev/index.js";
import { findRedisServerBinary } from "../../dev/redis-server.js";

export type BackendKindUnderTest = "redis-server" | "embedded";

const EMBEDDED_ENGINE = new URL("../../dev/engine/index.ts", import.meta.url);

export function hasRedisServer(): boolean {
  return findRedisServerBinary() !== undefined;
}

export function hasEmbeddedEngine(): boolean {
  return existsSync(EMBEDDED_ENGINE);
}

export function backendKindsUnderTest(): BackendKindUnderTest[] {
  const kinds: BackendKindUnderTest[] = [];
  if (hasRedisServer()) kinds.push("redis-server");
  else if (process.env.CI === "true") {
    throw new Error(
      "CI must test against a real Redis: install redis-server or set REDIS_SERVER_BIN",
    );
  }
  if (hasEmbeddedEngine()) kinds.push("embedded");
  if (kinds.length === 0) {
    throw new Error("no backend to test: install redis-server or add the embedded engine");
  }
  return kinds;
}

/**
 * Starts a dev server on `kind` before the file's tests and closes it after them. Returns a getter
 * (the server only exists once beforeAll has run).
 */
export function withDevServer(
  kind: BackendKindUnderTest,
  options: Omit<DevServerOptions, "backend"> = {},
): () => DevServer {
  let server: DevServer | undefined;
  beforeAll(async () => {
    server = await startDevServer({ ...options, backend: kind });
  });
  afterAll(async () => {
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

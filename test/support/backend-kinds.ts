/**
 * Which backends the suites run against (no vitest import: the workers' global setup reads it).
 *
 * - A real redis-server whenever the binary exists (PATH or REDIS_SERVER_BIN).
 * - The embedded engine whenever its module exists.
 * - In CI (`CI=true`) a missing redis-server is an error: CI must test against real Redis.
 */
import { existsSync } from "node:fs";
import { findRedisServerBinary } from "../../dev/redis-server.js";

export type BackendKindUnderTest = "redis-server" | "embedded";

const EMBEDDED_ENGINE = new URL("../../dev/engine/index.ts", import.meta.url);

export function hasRedisServer(): boolean {
  return findRedisServerBinary() !== undefined;
}

export function hasEmbeddedEngine(): boolean {
  return existsSync(EMBEDDED_ENGINE);
}

/**
 * The one guard of tests that need a real redis-server of their own (differential tests, a
 * spawned server): true when it is here; under CI=true its absence throws, as
 * backendKindsUnderTest does, so that no such file skips silently in CI.
 */
export function redisServerUnderTest(): boolean {
  return backendKindsUnderTest().includes("redis-server");
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

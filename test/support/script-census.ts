/**
 * The script census of a test run (issue 30): every local server the tests start writes, when it
 * stops, how many scripts it ran under per-key locking and under the global lock, and how many it
 * refused for an undeclared key. `npm test` then sums them (scripts/script-census.ts), so CI
 * prints the counts over the whole run and fails on a global-lock script nobody meant.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { DevServer } from "../../dev/index.js";

export const CENSUS_DIR = join(process.cwd(), "node_modules", ".cache", "edgelock-script-census");

export interface CensusEntry {
  /** The test file (or project) whose server this was. */
  readonly source: string;
  readonly profile: DevServer["profile"];
  readonly backend: DevServer["backendKind"];
  readonly keyLocking: number;
  readonly globalLock: number;
  readonly dynamicKeyRejections: number;
}

let written = 0;

/** A server's script counters, as its stats (or `GET /_edgelock/stats`) show them. */
type ScriptCounts = Pick<CensusEntry, "keyLocking" | "globalLock" | "dynamicKeyRejections">;

/** Records `server`'s script counts under `source`; call as it stops. */
export function recordScriptCensus(
  source: string,
  server: Pick<DevServer, "profile" | "backendKind">,
  scripts: ScriptCounts,
): void {
  const entry: CensusEntry = {
    source,
    profile: server.profile,
    backend: server.backendKind,
    keyLocking: scripts.keyLocking,
    globalLock: scripts.globalLock,
    dynamicKeyRejections: scripts.dynamicKeyRejections,
  };
  mkdirSync(CENSUS_DIR, { recursive: true });
  written += 1;
  writeFileSync(
    join(CENSUS_DIR, `${process.pid}-${Date.now()}-${written}.json`),
    JSON.stringify(entry),
  );
}

/** Forgets an earlier run's census (the node project's global setup, before any test). */
export function clearScriptCensus(): void {
  rmSync(CENSUS_DIR, { recursive: true, force: true });
}

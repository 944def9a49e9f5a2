/** Several independent databases for RedLock tests: one local REST server (and Redis) each. */
import { Redis } from "@upstash/redis";
import { afterEach } from "vitest";
import type { LockClient, LockClientOptions } from "../../../src/index.js";
import type { BackendKind, TestBed } from "../exclusive/testbed.js";
import { freshPrefix, useTestBed } from "../exclusive/testbed.js";

export function useDatabases(kind: BackendKind, count = 3): TestBed[] {
  const beds = Array.from({ length: count }, () => useTestBed(kind));
  afterEach(() => {
    for (const bed of beds) bed.server.faults.disable();
  });
  return beds;
}

/**
 * One LockClient per database, sharing a fresh prefix; @upstash/redis and edgelock each re-send
 * a failed request once, quickly, so that a failing database fails fast.
 */
export function clientsOn(beds: readonly TestBed[], overrides: Partial<LockClientOptions> = {}) {
  const prefix = freshPrefix();
  return beds.map((bed) =>
    bed.client({
      prefix,
      retries: 1,
      redis: new Redis({
        url: bed.server.url,
        token: bed.server.token,
        retry: { retries: 1, backoff: () => 5 },
      }),
      ...overrides,
    }),
  );
}

/** Fault options that touch only lock scripts (EVAL/EVALSHA). */
export const scriptsOnly = { commands: ["eval", "evalsha"] } as const;

/** Hold counts of `owner` for lock `name` on each database (null owner: any holder's). */
export async function holdCounts(
  clients: readonly LockClient[],
  name: string,
  owner?: string,
): Promise<number[]> {
  return Promise.all(clients.map((client) => client.lock(name).holdCount(owner)));
}

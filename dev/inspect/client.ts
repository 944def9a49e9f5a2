/**
 * The inspector's handler over a REST URL and token, for the local server's page and for
 * `edgelock inspect`. The token stays in this process: the page only calls the handler.
 */
import { Redis } from "@upstash/redis";
import { LockClient } from "../../src/client.js";
import { inspectorHandler } from "../../src/inspector/handler.js";
import type { RefreshBudget } from "../../src/inspector/snapshot.js";
import type { InspectorAccess } from "../../src/inspector/types.js";

export interface InspectTarget extends RefreshBudget {
  readonly url: string;
  readonly token: string;
  /** Key prefix of the locks. Default "edgelock". */
  readonly prefix?: string;
  readonly names?: readonly string[];
  /** Default "write": the Redis token still decides (a read-only one refuses SCAN and writes). */
  readonly access?: InspectorAccess;
  /** The server serves reads from a lagging replica (replica mode): the page says so. */
  readonly globalDatabase?: boolean;
}

export function inspectorFor(target: InspectTarget): (request: Request) => Promise<Response> {
  // No re-sends of its own: a refresh that fails is shown as failed and tried again later.
  const redis = new Redis({ url: target.url, token: target.token, retry: false });
  const client = new LockClient({
    redis,
    ...(target.prefix === undefined ? {} : { prefix: target.prefix }),
  });
  const access = target.access ?? "write";
  return inspectorHandler({
    client,
    access: () => access,
    ...(target.names === undefined ? {} : { names: target.names }),
    ...(target.globalDatabase === true ? { globalDatabase: true } : {}),
    ...pick(target),
  });
}

function pick(budget: RefreshBudget): RefreshBudget {
  const out: { -readonly [K in keyof RefreshBudget]: RefreshBudget[K] } = {};
  if (budget.scanCount !== undefined) out.scanCount = budget.scanCount;
  if (budget.maxScanCalls !== undefined) out.maxScanCalls = budget.maxScanCalls;
  if (budget.maxLocks !== undefined) out.maxLocks = budget.maxLocks;
  if (budget.maxListed !== undefined) out.maxListed = budget.maxListed;
  return out;
}

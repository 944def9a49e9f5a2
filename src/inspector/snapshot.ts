/**
 * One refresh: SCAN (never KEYS) edgelock's keys, then one read-only script per active lock,
 * within an explicit command budget since Upstash bills each; the snapshot says what it spent.
 */

import { readLock } from "./read-lock.js";
import { CommandCounter, type ExecRedis, isPermissionRefusal, scanPage } from "./redis.js";
import type { InspectedLock, InspectorSnapshot } from "./types.js";

/** How much one refresh may spend. */
export interface RefreshBudget {
  /**
   * The COUNT hint of each SCAN: about how many keys Redis looks at per call.
   * @default 1000
   */
  scanCount?: number;
  /**
   * SCAN calls per refresh at most; a larger database is walked over several refreshes
   * (`cursor`), and the snapshot says the walk is incomplete.
   * @default 10
   */
  maxScanCalls?: number;
  /**
   * Active locks read per refresh at most (one command each); the rest are counted, not read.
   * @default 50
   */
  maxLocks?: number;
  /**
   * Waiters and read holds listed per lock at most (all are counted).
   * @default 20
   */
  maxListed?: number;
}

export const DEFAULT_BUDGET: Required<RefreshBudget> = {
  scanCount: 1000,
  maxScanCalls: 10,
  maxLocks: 50,
  maxListed: 20,
};

/**
 * Key suffixes that exist only while a lock is held or waited for; a lock with none is idle (its
 * other keys say nothing about who holds it).
 */
const ACTIVE_SUFFIXES = new Set([
  "",
  ":queue",
  ":timeouts",
  ":parked",
  ":reads",
  ":readers",
  ":writers",
]);

/** A glob pattern matching `text` literally (SCAN's MATCH is a glob). */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (special) => `\\${special}`);
}

/** The SCAN pattern of every key edgelock keeps under `prefix`. */
export function keyPattern(prefix: string): string {
  return `${globEscape(prefix)}:{*`;
}

/** Lock name and suffix of an edgelock key, or undefined for another key. */
export function parseKey(
  prefix: string,
  key: string,
): { name: string; suffix: string } | undefined {
  const head = `${prefix}:{`;
  if (!key.startsWith(head)) return undefined;
  const close = key.indexOf("}", head.length);
  if (close < 0) return undefined;
  return { name: key.slice(head.length, close), suffix: key.slice(close + 1) };
}

function suffixKind(suffix: string): string {
  return suffix.startsWith(":op:") || suffix.startsWith(":wake:") ? ":op" : suffix;
}

export interface SnapshotRequest extends RefreshBudget {
  readonly prefix: string;
  /** Where to continue the walk of the key space; "0" starts over. */
  readonly cursor?: string;
  /** Locks read whatever SCAN finds: a read-only token refuses SCAN, so these are all it sees. */
  readonly names?: readonly string[];
  readonly canWrite: boolean;
  readonly readOnlyReason: string | null;
}

export async function takeSnapshot(
  redis: ExecRedis,
  request: SnapshotRequest,
): Promise<InspectorSnapshot> {
  const budget = { ...DEFAULT_BUDGET, ...definedOnly(request) };
  const counter = new CommandCounter();
  const active = new Set<string>();
  const idle = new Set<string>();
  let cursor = request.cursor ?? "0";
  let keysSeen = 0;
  let refused: string | null = null;
  let complete = false;
  try {
    const pattern = keyPattern(request.prefix);
    for (let call = 0; call < budget.maxScanCalls; call += 1) {
      const page = await scanPage(redis, cursor, pattern, budget.scanCount, counter);
      keysSeen += page.keys.length;
      for (const key of page.keys) {
        const parsed = parseKey(request.prefix, key);
        if (parsed === undefined) continue;
        if (ACTIVE_SUFFIXES.has(suffixKind(parsed.suffix))) active.add(parsed.name);
        else idle.add(parsed.name);
      }
      cursor = page.cursor;
      if (cursor === "0") {
        complete = true;
        break;
      }
      // Enough found to fill the page: stop spending, the cursor says where to go on.
      if (active.size >= budget.maxLocks) break;
    }
  } catch (error) {
    if (!isPermissionRefusal(error)) throw error;
    refused =
      "this token may not SCAN (Upstash's read-only token refuses it): only the locks named are shown";
    cursor = "0";
    complete = true;
  }
  for (const name of active) idle.delete(name);

  const wanted = [...new Set([...(request.names ?? []), ...[...active].sort()])];
  const toRead = wanted.slice(0, Math.max(budget.maxLocks, request.names?.length ?? 0));
  // Issued in one tick, so @upstash/redis pipelines them into one request (each still billed).
  const reads = await Promise.all(
    toRead.map((name) => readLock(redis, request.prefix, name, budget.maxListed, counter)),
  );
  const locks: InspectedLock[] = reads.map((read) => read.lock);
  const takenAt = reads[0]?.now;
  const idleNames = [...idle].sort();
  return {
    takenAt: takenAt ?? Date.now(),
    prefix: request.prefix,
    canWrite: request.canWrite && refused === null,
    readOnlyReason: refused !== null ? "the Redis token is read-only" : request.readOnlyReason,
    locks,
    idle: idleNames.slice(0, budget.maxLocks),
    idleCount: idleNames.length,
    notShown: wanted.length - toRead.length,
    scan: { cursor, complete, keysSeen, refused },
    cost: { scan: counter.scan, read: counter.read, total: counter.scan + counter.read },
  };
}

function definedOnly(budget: RefreshBudget): RefreshBudget {
  const out: Record<string, number> = {};
  for (const key of ["scanCount", "maxScanCalls", "maxLocks", "maxListed"] as const) {
    const value = budget[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

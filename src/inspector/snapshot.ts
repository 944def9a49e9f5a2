/**
 * One refresh: SCAN (never KEYS) edgelock's keys, then one read-only script per lock, semaphore
 * or latch in use, within an explicit command budget since Upstash bills each; the snapshot says
 * what it spent.
 */

import { LockInputError } from "../errors.js";
import { readLatch } from "./inspect-latch.js";
import { readLock } from "./inspect-lock.js";
import { readSemaphore } from "./inspect-semaphore.js";
import { classifyKey, type InspectedKind, keyPattern } from "./keys.js";
import { CommandCounter, type ExecRedis, isPermissionRefusal, scanPage } from "./redis.js";
import type {
  InspectedLatch,
  InspectedLock,
  InspectedSemaphore,
  InspectorSnapshot,
} from "./types.js";

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
   * Locks, semaphores and latches read per refresh at most (one command each), names given
   * included (read first); the rest are counted, not read. A request naming more names than
   * this is refused (400) before any command.
   * @default 50
   */
  maxLocks?: number;
  /**
   * Waiters, read holds and semaphore holds listed per lock or semaphore at most (all are
   * counted).
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

export interface SnapshotRequest extends RefreshBudget {
  readonly prefix: string;
  /** Where to continue the walk of the key space; "0" starts over. */
  readonly cursor?: string;
  /**
   * Names read whatever SCAN finds (as a lock, and as a semaphore and a latch where one exists):
   * a read-only token refuses SCAN, so these are all it sees.
   */
  readonly names?: readonly string[];
  readonly canWrite: boolean;
  readonly readOnlyReason: string | null;
  /** Why the view may be behind the primary, or null (InspectorSnapshot.lagNote). */
  readonly lagNote?: string | null;
}

export async function takeSnapshot(
  redis: ExecRedis,
  request: SnapshotRequest,
): Promise<InspectorSnapshot> {
  const budget = { ...DEFAULT_BUDGET, ...definedOnly(request) };
  // Before any command: a request may not buy reads past the budget by naming them.
  const names = namesWithinBudget(request.names ?? [], budget.maxLocks, "this snapshot");
  const counter = new CommandCounter();
  const walk = await walkKeys(redis, request, budget, counter);
  const tasks = readTasks(names, walk);
  // Named reads first, then the ones in use: never more than maxLocks, names included.
  const toRead = tasks.all.slice(0, budget.maxLocks);
  // Issued in one tick, so @upstash/redis pipelines them into one request (each still billed).
  const reads = await Promise.all(
    toRead.map((task) => readOne(redis, request.prefix, task, budget.maxListed, counter)),
  );
  const locks: InspectedLock[] = [];
  const semaphores: InspectedSemaphore[] = [];
  const latches: InspectedLatch[] = [];
  let takenAt: number | undefined;
  for (const read of reads) {
    takenAt ??= read.now;
    if (read.lock) locks.push(read.lock);
    if (read.semaphore) semaphores.push(read.semaphore);
    if (read.latch) latches.push(read.latch);
  }
  const idleNames = [...walk.idle].sort();
  return {
    takenAt: takenAt ?? Date.now(),
    prefix: request.prefix,
    canWrite: request.canWrite && walk.refused === null,
    readOnlyReason: walk.refused !== null ? "the Redis token is read-only" : request.readOnlyReason,
    lagNote: request.lagNote ?? null,
    locks,
    semaphores,
    latches,
    idle: idleNames.slice(0, budget.maxLocks),
    idleCount: idleNames.length,
    notShown: tasks.all.length - toRead.length,
    scan: {
      cursor: walk.cursor,
      complete: walk.complete,
      keysSeen: walk.keysSeen,
      refused: walk.refused,
    },
    cost: { scan: counter.scan, read: counter.read, total: counter.scan + counter.read },
  };
}

/**
 * `names` without repeats; LockInputError (a 400 from the handler) when more than `maxLocks` of
 * them: each costs a read, and a refresh reads at most `maxLocks`.
 */
export function namesWithinBudget(
  names: readonly string[],
  maxLocks: number,
  where: string,
): readonly string[] {
  const distinct = [...new Set(names)];
  if (distinct.length > maxLocks) {
    throw new LockInputError(
      `${where} gives ${distinct.length} names, more than the ${maxLocks} a refresh may read ` +
        "(maxLocks): give fewer, or raise maxLocks.",
    );
  }
  return distinct;
}

/** What one walk of the key space found, by kind. */
interface Walk {
  /** Names with a key in use, by kind. */
  readonly active: Record<InspectedKind, Set<string>>;
  /** Names with any key, by kind. */
  readonly seen: Record<InspectedKind, Set<string>>;
  /** Names with keys, none of them in use. */
  readonly idle: Set<string>;
  readonly cursor: string;
  readonly complete: boolean;
  /** Whether it went from the start to the end: a kind it did not see under a name is not there. */
  readonly whole: boolean;
  readonly keysSeen: number;
  readonly refused: string | null;
}

const KINDS: readonly InspectedKind[] = ["lock", "semaphore", "latch"];

function byKind(): Record<InspectedKind, Set<string>> {
  return { lock: new Set(), semaphore: new Set(), latch: new Set() };
}

/** SCANs (never KEYS) within the budget, sorting each key by name, kind and use. */
async function walkKeys(
  redis: ExecRedis,
  request: SnapshotRequest,
  budget: Required<RefreshBudget>,
  counter: CommandCounter,
): Promise<Walk> {
  const active = byKind();
  const seen = byKind();
  const idle = new Set<string>();
  const start = request.cursor ?? "0";
  let cursor = start;
  let keysSeen = 0;
  let activeCount = 0;
  try {
    const pattern = keyPattern(request.prefix);
    for (let call = 0; call < budget.maxScanCalls; call += 1) {
      const page = await scanPage(redis, cursor, pattern, budget.scanCount, counter);
      keysSeen += page.keys.length;
      for (const key of page.keys) {
        const found = classifyKey(request.prefix, key);
        if (found === undefined) continue;
        seen[found.kind].add(found.name);
        const inUse = active[found.kind];
        if (!found.active) idle.add(found.name);
        else if (!inUse.has(found.name)) {
          inUse.add(found.name);
          activeCount += 1;
        }
      }
      cursor = page.cursor;
      if (cursor === "0") break;
      // Enough found to fill the page: stop spending, the cursor says where to go on.
      if (activeCount >= budget.maxLocks) break;
    }
  } catch (error) {
    if (!isPermissionRefusal(error)) throw error;
    const refused =
      "this token may not SCAN (Upstash's read-only token refuses it): only the names given are shown";
    return { active, seen, idle, cursor: "0", complete: true, whole: false, keysSeen, refused };
  }
  for (const kind of KINDS) for (const name of active[kind]) idle.delete(name);
  const complete = cursor === "0";
  return {
    active,
    seen,
    idle,
    cursor,
    complete,
    whole: complete && start === "0",
    keysSeen,
    refused: null,
  };
}

/** One read: a kind under a name. */
interface ReadTask {
  readonly kind: InspectedKind;
  readonly name: string;
}

/**
 * What to read, named ones first: a name given is read as a lock (shown free if it is none) and
 * as a semaphore and a latch unless a whole walk saw none there; then whatever is in use, by name.
 */
function readTasks(names: readonly string[], walk: Walk): { all: ReadTask[]; named: number } {
  const tasks = new Map<string, ReadTask>();
  const add = (kind: InspectedKind, name: string) => tasks.set(`${kind} ${name}`, { kind, name });
  for (const name of names) {
    for (const kind of KINDS) {
      if (kind === "lock" || !walk.whole || walk.seen[kind].has(name)) add(kind, name);
    }
  }
  const named = tasks.size;
  const inUse = KINDS.flatMap((kind) => [...walk.active[kind]].map((name) => ({ kind, name })));
  inUse.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const { kind, name } of inUse) add(kind, name);
  return { all: [...tasks.values()], named };
}

/** What one read found; `now` is the server time where its script tells it. */
interface ReadResult {
  readonly lock?: InspectedLock;
  readonly semaphore?: InspectedSemaphore | null;
  readonly latch?: InspectedLatch | null;
  readonly now?: number;
}

async function readOne(
  redis: ExecRedis,
  prefix: string,
  { kind, name }: ReadTask,
  maxListed: number,
  counter: CommandCounter,
): Promise<ReadResult> {
  if (kind === "semaphore") return readSemaphore(redis, prefix, name, maxListed, counter);
  if (kind === "latch") return { latch: await readLatch(redis, prefix, name, counter) };
  return readLock(redis, prefix, name, maxListed, counter);
}

function definedOnly(budget: RefreshBudget): RefreshBudget {
  const out: Record<string, number> = {};
  for (const key of ["scanCount", "maxScanCalls", "maxLocks", "maxListed"] as const) {
    const value = budget[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

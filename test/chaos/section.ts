/**
 * One critical section of the workload: take a hold on a key, maybe re-enter it, do a racy
 * read-modify-write of the key's counter through the fenced store, maybe extend, maybe crash,
 * release — recording what the invariants need at every step.
 */
import { LockBackendError, LockClient, LockNotHeldError, MIN_LEASE_MS } from "../../src/index.js";
import { sleep as sleepMs } from "../../src/wait/sleep.js";
import type { ChaosConfig } from "./config.js";
import type { DeadHolderWatch } from "./dead-holders.js";
import type { FencedStore, WriteResult } from "./fenced-store.js";
import type { DeathCause, Journal } from "./journal.js";
import { settledBefore } from "./killable-renewer.js";
import type { OperationRunner } from "./operations.js";
import type { ChaosHold, ChaosIsolate, ChaosPrimitive, HoldPlan } from "./primitive.js";

export interface SectionContext {
  readonly config: ChaosConfig;
  readonly journal: Journal;
  readonly operations: OperationRunner;
  readonly primitive: ChaosPrimitive;
  readonly keys: readonly string[];
  readonly stores: ReadonlyMap<string, FencedStore>;
  /** The workload's seeded random source. */
  readonly random: () => number;
  /** Starts watching a holder that stopped without releasing. */
  bury(watch: DeadHolderWatch): void;
}

/** What one section will do, drawn up front so that a seed describes the whole section. */
interface SectionScript {
  readonly key: string;
  readonly plan: HoldPlan;
  readonly reenter: boolean;
  /** The inner hold's mode: mixed with the outer's. */
  readonly innerMode: HoldPlan["mode"];
  /** The inner hold (lease mode) extends to the shortest lease while the outer's is longer. */
  readonly innerShortExtend: boolean;
  readonly extend: boolean;
  readonly crash: "no" | "before-work" | "after-work";
  readonly holdMs: number;
}

function draw(ctx: SectionContext): SectionScript {
  const { config, random } = ctx;
  const key = ctx.keys[Math.floor(random() * ctx.keys.length)] ?? ctx.keys[0]!;
  const mode = random() < config.watchdogRate ? "watchdog" : "lease";
  const leaseMs = mode === "lease" ? config.leaseMs : config.watchdogTimeoutMs;
  const tryOnly = random() < config.tryRate;
  const reenter = random() < config.reentryRate;
  const innerMode = random() < config.watchdogRate ? "watchdog" : "lease";
  const innerShortExtend = innerMode === "lease" && random() < config.extendRate;
  const extend = mode === "lease" && random() < config.extendRate;
  const shared = random() < (ctx.primitive.sharedRate ?? 0);
  const crashes = random() < config.crashRate;
  const early = random() < 0.5;
  const long = random() < config.longHoldRate;
  const holdMs = long ? leaseMs * (0.6 + random() * 0.8) : random() * 3;
  return {
    key,
    plan: {
      owner: LockClient.newOwner(),
      mode,
      leaseMs,
      waitMs: tryOnly ? Math.floor(random() * 2) * config.leaseMs : config.waitMs,
      tryOnly,
      shared,
    },
    reenter,
    innerMode,
    innerShortExtend,
    extend,
    crash: crashes ? (early ? "before-work" : "after-work") : "no",
    holdMs,
  };
}

/** Re-sends on failure: the store's writes are idempotent by writer, its reads harmless. */
async function withRetries<T>(journal: Journal, action: () => Promise<T>): Promise<T | undefined> {
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      return await action();
    } catch {
      await sleepMs(10 * 2 ** attempt);
    }
  }
  journal.resourceErrors += 1;
  return undefined;
}

export async function runSection(ctx: SectionContext, isolate: ChaosIsolate): Promise<void> {
  const { journal, operations, primitive } = ctx;
  const script = draw(ctx);
  const { key, plan } = script;
  const keys = primitive.keysOf?.(key) ?? [key];
  journal.planned.set(plan.owner, keys);
  isolate.track(plan.owner);

  const acquired = await operations.run(plan.tryOnly ? "tryAcquire" : "acquire", () =>
    primitive.acquire(isolate, key, plan),
  );
  if (!acquired.ok) {
    // An acquire that failed in the network may have taken the lock all the same.
    if (acquired.hung || acquired.error instanceof LockBackendError) {
      const failedAt = Date.now();
      bury(ctx, key, plan.owner, "acquire-failed", failedAt, () => failedAt, plan.leaseMs);
    }
    return;
  }
  const hold = acquired.value;
  if (hold === null) return;

  const start = Date.now();
  let abortedAt = hold.signal.aborted ? start : Number.POSITIVE_INFINITY;
  hold.signal.addEventListener(
    "abort",
    () => {
      abortedAt = Math.min(abortedAt, Date.now());
    },
    { once: true },
  );
  recordToken(journal, key, hold);
  // Besides the hold's own arming requests, any request the library sent for the owner (a
  // handed-off hold's claim is one of its own).
  const armedSettledAt = (inner: ChaosHold | undefined, diedAt: number) =>
    Math.max(
      hold.lastArmedSettledAt(diedAt),
      inner?.lastArmedSettledAt(diedAt) ?? 0,
      settledBefore(isolate.requestsOf(hold.owner), diedAt),
    );

  await probe(ctx, keys);

  let inner: ChaosHold | undefined;
  let uncertainHolds = false;
  if (script.reenter && hold.reenter) {
    const reentered = await operations.run("reenter", () => hold.reenter!(script.innerMode));
    if (reentered.ok) {
      inner = reentered.value;
      recordToken(journal, key, inner);
      if (inner.fencingToken !== hold.fencingToken) journal.reentriesAfterLoss += 1;
      // The nested-hold hazard: an inner hold asks for the shortest lease; the outer's must stand.
      if (script.innerShortExtend && inner.extend) {
        const innerHold = inner;
        await operations.run("extend", () => innerHold.extend!(MIN_LEASE_MS));
      }
    } else if (reentered.hung || reentered.error instanceof LockBackendError) {
      uncertainHolds = true; // it may have counted a second hold
    }
  }

  const finish = (end: number) => {
    if (hold.signal.aborted) journal.lostDuringSection += 1;
    const validEnd = Math.min(end, hold.validUntil(), abortedAt);
    const shared = hold.shared ?? false;
    for (const each of keys) {
      journal.sections.push({
        key: each,
        owner: hold.owner,
        token: each === key ? hold.fencingToken : undefined,
        start,
        end,
        validEnd,
        shared,
      });
    }
    journal.holds.push({
      keys,
      owner: hold.owner,
      shared,
      mode: plan.mode,
      start,
      end,
      abortedAt: () => abortedAt,
      // Exclusive holds of one owner share one expiry, so the inner hold's re-arming requests
      // move the outer's end too (unless the re-entry found the hold gone and started a new one).
      // Read holds each keep their own.
      deadline: () =>
        Math.max(
          hold.confirmedDeadline(),
          inner !== undefined && !shared && inner.fencingToken === hold.fencingToken
            ? inner.confirmedDeadline()
            : Number.NEGATIVE_INFINITY,
        ),
    });
  };
  const crash = () => {
    const end = Date.now();
    hold.crash();
    finish(end);
    bury(ctx, key, hold.owner, "crash", end, () => armedSettledAt(inner, end), plan.leaseMs);
  };

  if (script.crash === "before-work") return crash();
  await readModifyWrite(ctx, isolate, key, hold, script);
  if (script.crash === "after-work") return crash();
  finish(Date.now());

  const releasedAll = (await release(ctx, inner)) && (await release(ctx, hold));
  if (!releasedAll) {
    hold.crash(); // stop renewing a hold we can no longer release: it must expire
    const failedAt = Date.now();
    bury(
      ctx,
      key,
      hold.owner,
      "release-failed",
      failedAt,
      () => armedSettledAt(inner, failedAt),
      plan.leaseMs,
    );
    return;
  }
  const stillHeld = await primitive.isHeldBy(key, hold.owner);
  if (stillHeld && uncertainHolds) {
    // The failed re-entry did count a hold after all: nobody knows it, so it must expire.
    const now = Date.now();
    bury(
      ctx,
      key,
      hold.owner,
      "acquire-failed",
      now,
      () => armedSettledAt(inner, now),
      plan.leaseMs,
    );
    return;
  }
  if (stillHeld && (primitive.databases ?? 1) > 1) {
    // A release that reached a majority (RedLock) may leave a database's copy to its lease.
    const now = Date.now();
    bury(ctx, key, hold.owner, "release-left-copy", now, () => now, plan.leaseMs);
    return;
  }
  journal.releaseChecks.push({ key, owner: hold.owner, stillHeld });
}

/** The racy part: read, pause, maybe extend, write read + 1 through the fencing check. */
async function readModifyWrite(
  ctx: SectionContext,
  isolate: ChaosIsolate,
  key: string,
  hold: ChaosHold,
  script: SectionScript,
): Promise<void> {
  const store = ctx.stores.get(key)!;
  const read = await withRetries(ctx.journal, () => store.read(isolate.redis));
  await sleepMs(script.holdMs);
  if (script.extend && hold.extend) {
    await ctx.operations.run("extend", () => hold.extend!(script.plan.leaseMs));
  }
  const token = hold.fencingToken;
  // A reader reads; only exclusive holds write.
  if (read === undefined || token === undefined || hold.shared) return;
  const written: WriteResult | undefined = await withRetries(ctx.journal, () =>
    store.write(isolate.redis, token, hold.owner, read + 1),
  );
  if (written) ctx.journal.writes.push({ key, owner: hold.owner, token, ...written });
}

/** Releases one hold, re-sending after backend failures. False when it could not be done. */
async function release(ctx: SectionContext, hold: ChaosHold | undefined): Promise<boolean> {
  if (hold === undefined) return true;
  for (let attempt = 0; attempt < 3; attempt++) {
    const released = await ctx.operations.run("release", () => hold.release());
    if (released.ok || released.error instanceof LockNotHeldError) return true;
    if (!(released.error instanceof LockBackendError)) return !released.hung;
  }
  return false;
}

/** Reads the hold's keys on the server right after the grant: the observer's own look. */
async function probe(ctx: SectionContext, keys: readonly string[]): Promise<void> {
  const sentAt = Date.now();
  try {
    const states = await ctx.primitive.state(keys);
    ctx.journal.samples.push({ sentAt, answeredAt: Date.now(), states });
  } catch {
    // The observer is fault-free; a failure only costs this probe.
  }
}

function recordToken(journal: Journal, key: string, hold: ChaosHold): void {
  // Read holds carry the last writer's token: shared by design.
  if (hold.fencingToken !== undefined && !hold.shared) {
    journal.tokens.push({ key, owner: hold.owner, token: hold.fencingToken });
  }
}

/**
 * Watches a holder that stopped: its hold must be gone one lease (`leaseMs`) after its last
 * arming request settled (`settledAt`), and, over several databases, one lease after each
 * database answered the last request naming the owner (`copyBound`).
 */
function bury(
  ctx: SectionContext,
  key: string,
  owner: string,
  cause: DeathCause,
  diedAt: number,
  settledAt: () => number,
  leaseMs: number,
): void {
  const { primitive } = ctx;
  const boundOf = () => {
    const settled = settledAt();
    const copies = primitive.copyBound?.(owner, leaseMs) ?? Number.NEGATIVE_INFINITY;
    return Math.max(settled + leaseMs, copies);
  };
  const record = {
    key,
    owner,
    cause,
    diedAt,
    boundAt: boundOf(),
    lastSeenHeldAt: null,
    freedAt: null,
  };
  ctx.journal.dead.push(record);
  ctx.bury({ record, boundOf });
}

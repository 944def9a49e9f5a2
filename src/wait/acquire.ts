/**
 * The acquisition flow every kind shares (plan, attempts, handle, claim, watchdog); a kind
 * supplies only its server operations.
 */
import { CLIENT_DEFAULTS } from "../defaults.js";
import { LockBackendError, LockWaitTimeoutError } from "../errors.js";
import { type HoldControl, LockHandle } from "../hold/handle.js";
import { newOperationId } from "../ids.js";
import { settleBy } from "../transport/call.js";
import { checkCanPark } from "../transport/redis-like.js";
import { checkDuration, checkLease, checkOptions, checkSignal } from "../validate.js";
import type { HoldKind } from "../watchdog/renewer.js";
import type { AttemptOutcome, HandOff, RenewedHold, WaitPlan } from "./attempt.js";
import { heldByOtherLocalOwner, noteLocalHold } from "./local-holds.js";
import { resolveWaitPolicy, type WaitOptions } from "./policy.js";
import { pollForLock, type WaitStep } from "./poll.js";
import { confirmClaim } from "./push/parking.js";
import type { LockRuntime } from "./runtime.js";

export interface AcquireOptions {
  /**
   * How long to keep trying while the lock is busy, in ms.
   * @default Infinity for `acquire()` (until acquired, aborted or out of poll budget); 0 for `tryAcquire()` (one attempt)
   */
  waitMs?: number;
  /**
   * Lease in ms: the lock expires after it and is never renewed. Without it the hold is in
   * watchdog mode: the lease is the client's `watchdogTimeoutMs`, renewed every third of it
   * while the handle is held.
   * @default undefined (watchdog mode)
   */
  leaseMs?: number;
  /**
   * Stops waiting when aborted (LockAbortedError).
   * @default undefined
   */
  signal?: AbortSignal;
  /**
   * Owner token. The same owner re-enters (the hold count rises); pass a handle's `owner` to
   * continue work in another invocation.
   * @default the owner of the enclosing `client.scope()`, else a fresh random one
   */
  owner?: string;
  /**
   * Overrides the client's polling policy for this call.
   * @default the client's `wait`
   */
  wait?: WaitOptions;
}

const ACQUIRE_KEYS = ["waitMs", "leaseMs", "signal", "owner", "wait"] as const;

/** `defaultWaitMs`: Infinity for acquire(), 0 for tryAcquire(). Throws LockInputError. */
export function planWait(runtime: LockRuntime, options: unknown, defaultWaitMs: number): WaitPlan {
  const given = checkOptions<AcquireOptions>(options, "acquire options", ACQUIRE_KEYS);
  const waitMs =
    given.waitMs === undefined
      ? defaultWaitMs
      : checkDuration(given.waitMs, "waitMs", { min: 0, allowInfinity: true });
  const leaseMs = given.leaseMs === undefined ? undefined : checkLease(given.leaseMs);
  const signal = checkSignal(given.signal);
  const policy =
    given.wait === undefined
      ? runtime.waitPolicy
      : resolveWaitPolicy(given.wait, runtime.waitPolicy);
  if (policy.mode === "push") checkCanPark(runtime.ctx.redis, policy.wakeBy);
  return {
    waitMs,
    mayWait: waitMs !== 0,
    leaseMs: leaseMs ?? runtime.watchdogTimeoutMs,
    renewing: leaseMs === undefined,
    signal,
    deadline: Date.now() + waitMs,
    owner: runtime.resolveOwner(given.owner),
    policy,
  };
}

/**
 * What a watchdog renews: a hold its kind's extend script can renew from anywhere (the Durable
 * Object watchdog does) by its key, `lockKey` — a reentrant lock hash (`kind` "lock", the
 * default) or a semaphore's leases ("semaphore") — or a hold only this process knows how to renew
 * (a read hold, a MultiLock, a RedLock), named by an id unique to that hold.
 */
export type WatchTarget =
  | { readonly lockKey: string; readonly kind?: HoldKind; readonly localId?: never }
  | { readonly localId: string; readonly lockKey?: never; readonly kind?: never };

export interface AcquisitionSpec {
  readonly runtime: LockRuntime;
  readonly name: string;
  /** What errors call the hold (see HandleInit.noun). Default "lock". */
  readonly noun?: "lock" | "semaphore";
  /** What the watchdog renews; holds of one owner on the same target share one renewal. */
  readonly watch: WatchTarget;
  /**
   * `operationId` is shared by all attempts until one answers it is spent: whichever request
   * took a hold (a lost answer, a re-send, a late copy), later attempts replay it, re-arming the
   * lease from their arrival, instead of taking a second. Busy attempts record nothing. Kinds
   * that resolve unknown outcomes themselves (rollback, undo) ignore it.
   */
  attempt(owner: string, leaseMs: number, operationId: string): Promise<AttemptOutcome>;
  control(owner: string, fencingToken: number): HoldControl;
  /**
   * Re-arms hold `hold.fencingToken` (watchdog, claim confirmation); false when it is gone (a
   * later hold of the owner is left alone). With `hold.claim` the server counts the lease from
   * the grant while nothing re-armed the hold since.
   */
  renew(owner: string, leaseMs: number, hold: RenewedHold): Promise<boolean>;
  /** For the watchdog: re-entrant handles of one hold share a renewal. Default: the token. */
  holdId?(fencingToken: number): string;
  /** Leaves a queue and closes `operationId`, so that a late copy of an attempt takes nothing. */
  gaveUp?(owner: string, operationId: string): Promise<void>;
}

export type Acquisition =
  | { readonly handle: LockHandle }
  | {
      readonly waitMs: number;
      readonly holderTtlMs: number | null;
      /** This client holds the lock under another owner: the wait was for its own hold. */
      readonly heldByThisClient: boolean;
    };

export type AcquisitionOf = (plan: WaitPlan) => AcquisitionSpec;

/** `defaultWaitMs`: Infinity for acquire(), 0 for tryAcquire(). */
export async function acquireHold(
  runtime: LockRuntime,
  options: unknown,
  defaultWaitMs: number,
  specOf: AcquisitionOf,
): Promise<Acquisition> {
  const plan = planWait(runtime, options, defaultWaitMs);
  const spec = specOf(plan);
  const { owner, signal, waitMs, renewing } = plan;
  const effectiveLease = plan.leaseMs;

  let operationId = newOperationId();
  const waitId = runtime.events.newWaitId();
  let sentAt = 0;
  const startedAt = Date.now();
  let requests = 0;
  let handOff: HandOff | undefined;
  let result: Awaited<ReturnType<typeof pollForLock<number>>>;
  try {
    result = await pollForLock({
      lockName: spec.name,
      waitMs,
      signal,
      policy: plan.policy,
      attempt: async () => {
        // A replay re-arms the lease on arrival, so the lease counts from this attempt's send.
        const attemptSentAt = Date.now();
        requests += 1;
        const outcome = await spec.attempt(owner, effectiveLease, operationId);
        if (outcome.kind === "acquired") {
          sentAt = attemptSentAt;
          handOff = outcome.handOff;
        } else if (outcome.operationSpent) operationId = newOperationId();
        return outcome.kind === "acquired"
          ? { done: true, value: outcome.fencingToken }
          : {
              done: false,
              holderTtlMs: outcome.holderTtlMs,
              ...(outcome.nextPollMs === undefined ? {} : { nextPollMs: outcome.nextPollMs }),
              ...(outcome.why === undefined ? {} : { why: outcome.why }),
            };
      },
      ...(runtime.events.listens("waitStep")
        ? {
            onStep: (step: WaitStep) =>
              runtime.events.emit({ type: "waitStep", name: spec.name, waitId, ...step }),
          }
        : {}),
    });
  } catch (error) {
    // Not awaited on a failing backend: the error comes within its bound, not a call later.
    const answerBy = error instanceof LockBackendError ? 0 : Number.POSITIVE_INFINITY;
    await giveUp(spec, owner, operationId, answerBy);
    emitNotAcquired(
      spec,
      waitId,
      startedAt,
      requests,
      error instanceof Error ? error.name : "Error",
    );
    throw error;
  }
  if (!result.acquired) {
    const backendTimeoutMs = runtime.ctx.retry.timeoutMs ?? CLIENT_DEFAULTS.backendTimeoutMs;
    await giveUp(spec, owner, operationId, plan.deadline + backendTimeoutMs);
    emitNotAcquired(spec, waitId, startedAt, requests, "busy");
    return {
      waitMs,
      holderTtlMs: result.holderTtlMs,
      heldByThisClient: heldByOtherLocalOwner(runtime, spec.name, owner),
    };
  }

  // A hand-off granted a claim window: the hold confirms its own lease before it ends.
  const claim = handOff !== undefined && handOff.leaseMs < effectiveLease ? handOff : undefined;
  const acquiredAt = handOff?.grantedAt ?? sentAt;
  const forgetLocalHold = noteLocalHold(runtime, spec.name, owner);
  const handle = new LockHandle({
    name: spec.name,
    ...(spec.noun === undefined ? {} : { noun: spec.noun }),
    owner,
    fencingToken: result.value,
    leaseMs: effectiveLease,
    renewing,
    acquiredAt,
    ...(claim ? { claimLeaseMs: claim.leaseMs } : {}),
    control: observedRelease(
      spec,
      result.value,
      acquiredAt,
      spec.control(owner, result.value),
      forgetLocalHold,
    ),
    reportLost: (reason, cause) => emitLost(spec, owner, reason, cause),
  });
  handle.signal.addEventListener("abort", forgetLocalHold, { once: true });
  runtime.events.emit({
    type: "acquired",
    name: spec.name,
    waitId,
    fencingToken: result.value,
    waitedMs: Date.now() - startedAt,
    requests,
    handOff: handOff !== undefined,
  });
  if (claim === undefined) {
    if (renewing) watch(spec, handle, owner, acquiredAt);
  } else if (renewing && runtime.watchdogs.renewsInProcess) {
    // Its first renewal, by half the window, confirms it: the claim lives and dies with the
    // process's other renewals.
    watch(spec, handle, owner, acquiredAt, claim.leaseMs);
  } else {
    await confirmClaim({
      handle,
      leaseMs: effectiveLease,
      acquiredAt,
      claimMs: claim.leaseMs,
      renew: (leaseMs, hold) => spec.renew(owner, leaseMs, hold),
      failed: (error) =>
        runtime.events.emit({ type: "renewalFailed", name: spec.name, owner, error }),
      confirmed: (confirmedAt) => watch(spec, handle, owner, confirmedAt),
    });
  }
  return { handle };
}

/**
 * Awaited until `answerBy` at most, so an acquire ends within `waitMs` + `backendTimeoutMs`; a
 * failed or unawaited leave leaves a place that expires with the waiter timeout.
 */
async function giveUp(
  spec: AcquisitionSpec,
  owner: string,
  operationId: string,
  answerBy: number,
): Promise<void> {
  const leaving = spec.gaveUp?.(owner, operationId).catch(() => {});
  const patience = answerBy - Date.now();
  if (leaving === undefined || patience <= 0) return;
  if (!Number.isFinite(patience)) return leaving;
  await settleBy(leaving, answerBy, patience).catch(() => {});
}

/** acquire(): throws LockWaitTimeoutError. */
export async function acquireOrThrow(
  runtime: LockRuntime,
  name: string,
  options: unknown,
  specOf: AcquisitionOf,
): Promise<LockHandle> {
  const outcome = await acquireHold(runtime, options, Number.POSITIVE_INFINITY, specOf);
  if ("handle" in outcome) return outcome.handle;
  throw new LockWaitTimeoutError(
    name,
    outcome.waitMs,
    outcome.holderTtlMs,
    outcome.heldByThisClient,
  );
}

/** tryAcquire(): null when the wait ran out. */
export async function acquireOrNull(
  runtime: LockRuntime,
  options: unknown,
  specOf: AcquisitionOf,
): Promise<LockHandle | null> {
  const outcome = await acquireHold(runtime, options, 0, specOf);
  return "handle" in outcome ? outcome.handle : null;
}

/** `claimLeaseMs`: a hand-off's claim window, confirmed by the first renewal (firstLeaseMs). */
function watch(
  spec: AcquisitionSpec,
  handle: LockHandle,
  owner: string,
  confirmedAt: number,
  claimLeaseMs?: number,
) {
  const { runtime, name } = spec;
  const leaseMs = runtime.watchdogTimeoutMs;
  const { fencingToken } = handle;
  // A hold with a key can be renewed elsewhere, by its kind's script; one without, only here.
  const { lockKey: key, kind, localId } = spec.watch;
  const leave = runtime.watchdogs.join(
    key === undefined ? `local ${localId}` : `lock ${key}`,
    spec.holdId?.(fencingToken) ?? String(fencingToken),
    handle,
    {
      name,
      owner,
      fencingToken,
      key,
      kind,
      leaseMs,
      ...(claimLeaseMs === undefined ? {} : { firstLeaseMs: claimLeaseMs }),
      renew: async () => {
        const sentAt = Date.now();
        const held = await spec.renew(owner, leaseMs, { fencingToken });
        if (held && handle.claimPending) handle.claimed(sentAt, leaseMs);
        if (held) {
          const durationMs = Date.now() - sentAt;
          runtime.events.emit({ type: "renewed", name, fencingToken, durationMs });
        }
        return held;
      },
      failed: (error) => runtime.events.emit({ type: "renewalFailed", name, owner, error }),
      lost: (reason, cause) => emitLost(spec, owner, reason, cause),
    },
    confirmedAt,
  );
  handle.attachWatchdog(leave);
}

function emitNotAcquired(
  spec: AcquisitionSpec,
  waitId: number,
  startedAt: number,
  requests: number,
  reason: string,
): void {
  const waitedMs = Date.now() - startedAt;
  const { name } = spec;
  spec.runtime.events.emit({ type: "notAcquired", name, waitId, waitedMs, requests, reason });
}

/** Emits `released` for each release request that answers. */
function observedRelease(
  spec: AcquisitionSpec,
  fencingToken: number,
  acquiredAt: number,
  control: HoldControl,
  ended: () => void,
): HoldControl {
  return {
    extend: (leaseMs) => control.extend(leaseMs),
    release: async (operationId) => {
      const sentAt = Date.now();
      const result = await control.release(operationId);
      ended();
      spec.runtime.events.emit({
        type: "released",
        name: spec.name,
        fencingToken,
        heldMs: Date.now() - acquiredAt,
        durationMs: Date.now() - sentAt,
        released: result.released,
      });
      return result;
    },
  };
}

function emitLost(spec: AcquisitionSpec, owner: string, reason: string, cause: unknown): void {
  spec.runtime.events.emit({ type: "lockLost", name: spec.name, owner, reason, cause });
}

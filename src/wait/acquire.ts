/**
 * The acquisition flow every kind shares: plan the wait once, run the attempts until held or given
 * up, build the handle, confirm a handed-off hold's claim, and join the watchdog in watchdog mode.
 * A kind supplies only its server operations (attempt, renew, control, gaveUp).
 */
import { CLIENT_DEFAULTS } from "../defaults.js";
import { LockBackendError, LockWaitTimeoutError } from "../errors.js";
import { newOperationId } from "../ids.js";
import { type HoldControl, LockHandle } from "../locks/handle.js";
import type { LockRuntime } from "../locks/runtime.js";
import { settleBy } from "../transport/call.js";
import { checkCanBlock } from "../transport/redis-like.js";
import { checkDuration, checkLease, checkOptions, checkSignal } from "../validate.js";
import type { AttemptOutcome, HandOff, RenewedHold, WaitPlan } from "./attempt.js";
import { confirmClaim } from "./parking.js";
import { resolveWaitPolicy, type WaitOptions } from "./policy.js";
import { pollForLock } from "./poll.js";

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

/**
 * Checks `options` and resolves them into a plan; `defaultWaitMs` is Infinity for acquire() and
 * 0 for tryAcquire(). Throws LockInputError on bad input.
 */
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
  if (policy.mode === "push") checkCanBlock(runtime.ctx.redis);
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
 * What a watchdog renews: a reentrant lock hash (`lockKey`), which `lock.extend` can renew from
 * anywhere (the Durable Object watchdog does), or a hold only this process knows how to renew
 * (a read hold, a MultiLock, a RedLock), named by an id unique to that hold.
 */
export type WatchTarget = { readonly lockKey: string } | { readonly localId: string };

/** The watchdog registry's key of a target: holds of one owner on it share one renewal. */
function registryKey(watch: WatchTarget): string {
  return "lockKey" in watch ? `lock ${watch.lockKey}` : `local ${watch.localId}`;
}

export interface AcquisitionSpec {
  readonly runtime: LockRuntime;
  readonly name: string;
  /** What the watchdog renews; holds of one owner on the same target share one renewal. */
  readonly watch: WatchTarget;
  /**
   * One attempt for `owner`, named `operationId`: the acquisition's id, the same for all its
   * attempts until one answers that it is spent. Whichever request of the acquisition took a
   * hold (an attempt whose answer was lost, a re-send, a copy the client gave up on that
   * reached Redis late), every later attempt replays that record instead of taking a second
   * hold, and the replay re-arms the lease from its own arrival. A busy attempt records nothing,
   * so sharing the id costs nothing. A kind that resolves its own unknown outcomes (rollback,
   * undo by its own ids) ignores it.
   */
  attempt(owner: string, leaseMs: number, operationId: string): Promise<AttemptOutcome>;
  /** Extends and releases one hold of `owner`. */
  control(owner: string, fencingToken: number): HoldControl;
  /**
   * Re-arms the hold `hold.fencingToken` of `owner` (watchdog renewal, claim confirmation): true
   * when re-armed, false when that hold is gone (a later hold of the owner is left alone). With
   * `hold.claim` (kinds that hand off: a push hand-off's claim window and the hold's lease from
   * the grant), the server counts the lease from the grant while nothing re-armed the hold since.
   */
  renew(owner: string, leaseMs: number, hold: RenewedHold): Promise<boolean>;
  /**
   * Names the hold a handle with `fencingToken` belongs to, for the watchdog: re-entrant
   * handles of one hold share a renewal, a later hold gets its own. Default: the token.
   */
  holdId?(fencingToken: number): string;
  /**
   * Called when a wait ends without the lock (timeout, abort, budget, failure): leaves a queue,
   * and closes operation `operationId` so that a late copy of one of its attempts takes nothing.
   */
  gaveUp?(owner: string, operationId: string): Promise<void>;
}

export type Acquisition =
  | { readonly handle: LockHandle }
  | { readonly waitMs: number; readonly holderTtlMs: number | null };

/** The spec of one acquisition, made from its plan. */
export type AcquisitionOf = (plan: WaitPlan) => AcquisitionSpec;

/** Runs the acquisition; `defaultWaitMs` is Infinity for acquire() and 0 for tryAcquire(). */
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
            };
      },
    });
  } catch (error) {
    // On a failing backend the leave is sent but not awaited: the error comes within its
    // documented bound, not one more call later.
    const answerBy = error instanceof LockBackendError ? 0 : Number.POSITIVE_INFINITY;
    await giveUp(spec, owner, operationId, answerBy);
    emitNotAcquired(spec, startedAt, requests, error instanceof Error ? error.name : "Error");
    throw error;
  }
  if (!result.acquired) {
    const backendTimeoutMs = runtime.ctx.retry.timeoutMs ?? CLIENT_DEFAULTS.backendTimeoutMs;
    await giveUp(spec, owner, operationId, plan.deadline + backendTimeoutMs);
    emitNotAcquired(spec, startedAt, requests, "busy");
    return { waitMs, holderTtlMs: result.holderTtlMs };
  }

  // A hand-off granted the claim window: the hold must confirm its own lease before it ends.
  const claim = handOff !== undefined && handOff.leaseMs < effectiveLease ? handOff : undefined;
  const acquiredAt = handOff?.grantedAt ?? sentAt;
  const handle = new LockHandle({
    name: spec.name,
    owner,
    fencingToken: result.value,
    leaseMs: effectiveLease,
    renewing,
    acquiredAt,
    ...(claim ? { claimLeaseMs: claim.leaseMs } : {}),
    control: observedRelease(spec, result.value, acquiredAt, spec.control(owner, result.value)),
    reportLost: (reason, cause) => emitLost(spec, owner, reason, cause),
  });
  runtime.events.emit({
    type: "acquired",
    name: spec.name,
    fencingToken: result.value,
    waitedMs: Date.now() - startedAt,
    requests,
    handOff: handOff !== undefined,
  });
  if (claim === undefined) {
    if (renewing) watch(spec, handle, owner, acquiredAt);
  } else if (renewing && runtime.watchdogs.renewsInProcess) {
    // The in-process watchdog's first renewal, by half the claim window, confirms it: the
    // claim lives and dies with the process's other renewals.
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
 * Leaves the wait (its queue place, its parked registration), waiting for the answer until
 * `answerBy` (client clock) at most: a waited acquire ends within `waitMs` + one
 * `backendTimeoutMs` however slow the leave is. A leave that fails or is not awaited costs
 * nothing worse than the place left behind, which expires with the waiter timeout.
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
  // Past `answerBy` the leave runs on unobserved.
  await settleBy(leaving, answerBy, patience).catch(() => {});
}

/** acquire(): the handle, or LockWaitTimeoutError. */
export async function acquireOrThrow(
  runtime: LockRuntime,
  name: string,
  options: unknown,
  specOf: AcquisitionOf,
): Promise<LockHandle> {
  const outcome = await acquireHold(runtime, options, Number.POSITIVE_INFINITY, specOf);
  if ("handle" in outcome) return outcome.handle;
  throw new LockWaitTimeoutError(name, outcome.waitMs, outcome.holderTtlMs);
}

/** tryAcquire(): the handle, or null when the wait ran out. */
export async function acquireOrNull(
  runtime: LockRuntime,
  options: unknown,
  specOf: AcquisitionOf,
): Promise<LockHandle | null> {
  const outcome = await acquireHold(runtime, options, 0, specOf);
  return "handle" in outcome ? outcome.handle : null;
}

/**
 * Joins the watchdog. `claimLeaseMs`: a handed-off hold's claim window, which its first renewal
 * confirms (see RenewalTarget.firstLeaseMs).
 */
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
  const leave = runtime.watchdogs.join(
    registryKey(spec.watch),
    spec.holdId?.(fencingToken) ?? String(fencingToken),
    handle,
    {
      name,
      owner,
      fencingToken,
      ...("lockKey" in spec.watch ? { key: spec.watch.lockKey } : {}),
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
  startedAt: number,
  requests: number,
  reason: string,
): void {
  const waitedMs = Date.now() - startedAt;
  spec.runtime.events.emit({ type: "notAcquired", name: spec.name, waitedMs, requests, reason });
}

/** The hold's control, with a `released` event for each release request that answers. */
function observedRelease(
  spec: AcquisitionSpec,
  fencingToken: number,
  acquiredAt: number,
  control: HoldControl,
): HoldControl {
  return {
    extend: (leaseMs) => control.extend(leaseMs),
    release: async (operationId) => {
      const sentAt = Date.now();
      const result = await control.release(operationId);
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

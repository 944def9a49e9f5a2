/**
 * The acquisition flow every primitive shares: validate options, resolve the owner, poll with the
 * wait policy, build the handle, and join the watchdog in watchdog mode. A primitive supplies only
 * its server operations (attempt, extend, release).
 */
import { CLIENT_DEFAULTS } from "../defaults.js";
import { LockBackendError, LockWaitTimeoutError } from "../errors.js";
import { newOperationId } from "../ids.js";
import { settleBy } from "../transport/call.js";
import { checkCanBlock } from "../transport/redis-like.js";
import { checkDuration, checkLease, checkOptions, checkSignal } from "../validate.js";
import { resolveWaitPolicy, type WaitOptions } from "../wait/policy.js";
import { pollForLock } from "../wait/poll.js";
import type { AttemptOutcome, AttemptWait, HandOff } from "./attempt.js";
import { type HoldControl, LockHandle } from "./handle.js";
import type { LockRuntime } from "./runtime.js";

export interface AcquireOptions {
  /**
   * How long to keep trying while the lock is busy, in ms. `acquire()`: default Infinity (until
   * acquired, aborted or out of poll budget). `tryAcquire()`: default 0 (one attempt).
   */
  waitMs?: number;
  /**
   * Lease in ms: the lock expires after it and is never renewed. Default: none, which means
   * watchdog mode: the lease is the client's `watchdogTimeoutMs`, renewed every third of it
   * while the handle is held.
   */
  leaseMs?: number;
  /** Stops waiting when aborted (LockAbortedError). Default: none. */
  signal?: AbortSignal;
  /**
   * Owner token. Default: the owner of the enclosing `client.scope()`, else a fresh random one.
   * The same owner re-enters (the hold count rises); pass a handle's `owner` to continue work
   * in another invocation.
   */
  owner?: string;
  /** Overrides the client's polling policy for this call. Default: the client's. */
  wait?: WaitOptions;
}

const ACQUIRE_KEYS = ["waitMs", "leaseMs", "signal", "owner", "wait"] as const;

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
  attempt(
    owner: string,
    leaseMs: number,
    operationId: string,
    wait: AttemptWait,
  ): Promise<AttemptOutcome>;
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

/** The hold a renewal acts on. */
export interface RenewedHold {
  readonly fencingToken: number;
  readonly claim?: { readonly claimMs: number; readonly grantLeaseMs: number };
}

export type Acquisition =
  | { readonly handle: LockHandle }
  | { readonly waitMs: number; readonly holderTtlMs: number | null };

/** Runs the acquisition; `defaultWaitMs` is Infinity for acquire() and 0 for tryAcquire(). */
export async function acquireHold(
  spec: AcquisitionSpec,
  options: unknown,
  defaultWaitMs: number,
): Promise<Acquisition> {
  const { runtime } = spec;
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
  const owner = runtime.resolveOwner(given.owner);
  const renewing = leaseMs === undefined;
  const effectiveLease = leaseMs ?? runtime.watchdogTimeoutMs;

  let operationId = newOperationId();
  let sentAt = 0;
  const startedAt = Date.now();
  let requests = 0;
  let handOff: HandOff | undefined;
  const wait: AttemptWait = { signal, deadline: Date.now() + waitMs };
  let result: Awaited<ReturnType<typeof pollForLock<number>>>;
  try {
    result = await pollForLock({
      lockName: spec.name,
      waitMs,
      signal,
      policy,
      attempt: async () => {
        // A replay re-arms the lease on arrival, so the lease counts from this attempt's send.
        const attemptSentAt = Date.now();
        requests += 1;
        const outcome = await spec.attempt(owner, effectiveLease, operationId, wait);
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
    await giveUp(spec, owner, operationId, wait.deadline + backendTimeoutMs);
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
    return { handle };
  }
  if (renewing && runtime.watchdogs.renewsInProcess) {
    // The in-process watchdog's first renewal, by half the claim window, confirms it: the
    // claim lives and dies with the process's other renewals.
    watch(spec, handle, owner, acquiredAt, claim.leaseMs);
    return { handle };
  }
  const pending: PendingClaim = {
    spec,
    handle,
    owner,
    leaseMs: effectiveLease,
    acquiredAt,
    claimMs: claim.leaseMs,
  };
  if (renewing) {
    // A watchdog elsewhere (a Durable Object) renews holds that outlive this invocation, whose
    // timers would not confirm the claim in time: confirm it now, trying again within the claim
    // window before the handle is returned (no timer of this invocation outlives it).
    while ((await claimLease(pending)) === "failed") {
      const retryIn = claimRetryInMs(handle);
      if (retryIn === undefined) break;
      await new Promise((resolve) => setTimeout(resolve, retryIn));
    }
  } else {
    // Most holds end within half the claim window: their release confirms nothing and costs
    // nothing more. A longer one confirms its lease then.
    claimLater(pending, acquiredAt + claim.leaseMs / 2 - Date.now());
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

/** A handed-off hold whose own lease is still to be confirmed. */
interface PendingClaim {
  readonly spec: AcquisitionSpec;
  readonly handle: LockHandle;
  readonly owner: string;
  /** The hold's own lease: fixed, counted from the grant, or the watchdog's. */
  readonly leaseMs: number;
  /** The earliest moment the grant can have been made (client clock). */
  readonly acquiredAt: number;
  /** The claim window the hand-off granted. */
  readonly claimMs: number;
}

/** How long to wait before a failed claim is tried again: half the window left, if enough is. */
function claimRetryInMs(handle: LockHandle): number | undefined {
  const retryIn = Math.floor((handle.expiresAt - Date.now()) / 2);
  return retryIn < 10 ? undefined : retryIn;
}

/** Runs claimLease in `delayMs` (again, if it fails), unless the handle is released first. */
function claimLater(claim: PendingClaim, delayMs: number): void {
  const timer = setTimeout(
    async () => {
      if ((await claimLease(claim)) !== "failed") return;
      const retryIn = claimRetryInMs(claim.handle);
      if (retryIn !== undefined) claimLater(claim, retryIn);
    },
    Math.max(0, delayMs),
  );
  (timer as { unref?: () => void }).unref?.();
  claim.handle.attachWatchdog(() => clearTimeout(timer));
}

/**
 * Confirms a handed-off hold's own lease (a fixed lease counted from the grant, or the
 * watchdog's) before the claim window ends; then the watchdog, if any, takes over. A hold found
 * gone is lost. "failed": the request failed, and the caller may try again while the window lasts.
 */
async function claimLease(claim: PendingClaim): Promise<"done" | "failed"> {
  const { spec, handle, owner, leaseMs, acquiredAt, claimMs } = claim;
  if (handle.released) return "done";
  const sentAt = Date.now();
  const lease = handle.renewing ? leaseMs : Math.max(1, acquiredAt + leaseMs - sentAt);
  let held: boolean;
  try {
    // A fixed lease counts from the grant: the server anchors it there (see lock.extend).
    const { fencingToken } = handle;
    held = await (handle.renewing
      ? spec.renew(owner, lease, { fencingToken })
      : spec.renew(owner, lease, { fencingToken, claim: { claimMs, grantLeaseMs: leaseMs } }));
  } catch (error) {
    spec.runtime.events.emit({ type: "renewalFailed", name: spec.name, owner, error });
    return handle.released ? "done" : "failed";
  }
  if (handle.released) return "done";
  if (!held) {
    handle.claimFailed("it was gone when its claim window was confirmed");
    return "done";
  }
  // Lost meanwhile (the window ran out before the answer came): what the claim found may be a
  // later hold of the same owner, not this one.
  if (handle.signal.aborted) return "done";
  handle.claimed(sentAt, lease);
  if (handle.renewing) watch(spec, handle, owner, sentAt);
  return "done";
}

/** acquire(): the handle, or LockWaitTimeoutError. */
export async function acquireOrThrow(spec: AcquisitionSpec, options: unknown): Promise<LockHandle> {
  const outcome = await acquireHold(spec, options, Number.POSITIVE_INFINITY);
  if ("handle" in outcome) return outcome.handle;
  throw new LockWaitTimeoutError(spec.name, outcome.waitMs, outcome.holderTtlMs);
}

/** tryAcquire(): the handle, or null when the wait ran out. */
export async function acquireOrNull(
  spec: AcquisitionSpec,
  options: unknown,
): Promise<LockHandle | null> {
  const outcome = await acquireHold(spec, options, 0);
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

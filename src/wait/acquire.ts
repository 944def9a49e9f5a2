/**
 * The acquisition flow every kind shares (plan, attempts, handle, claim, watchdog); a kind
 * supplies only its server operations. Below it: how the queued kinds wait, and the holds a
 * client has live (to tell a wait on its own client's hold).
 */
import { CLIENT_DEFAULTS, QUEUE_DEFAULTS } from "../defaults.js";
import { LockBackendError, LockWaitTimeoutError } from "../errors.js";
import { type HoldControl, LockHandle } from "../hold/handle.js";
import { newOperationId } from "../platform.js";
import { settleBy } from "../transport/call.js";
import { checkCanPark } from "../transport/redis-like.js";
import { checkDuration, checkLease, checkOptions, checkSignal } from "../validate.js";
import type { HoldKind } from "../watchdog/renewer.js";
import type {
  AttemptOutcome,
  HandOff,
  QueuedAttemptOutcome,
  RenewedHold,
  WaiterTerms,
  WaitPlan,
} from "./attempt.js";
import { resolveWaitPolicy, type WaitOptions } from "./policy.js";
import { pollForLock, TurnPacer, type TurnView, type WaitStep } from "./poll.js";
import { confirmClaim } from "./push/parking.js";
import { NOT_YET, type Park, parkingFor, type WaitKeys } from "./push/wake.js";
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
  /**
   * `grantOf`: the acquisition's operation id where its hold was granted by word and the grant's
   * record waits for the release (HandOff.recorded).
   */
  control(owner: string, fencingToken: number, grantOf?: string): HoldControl;
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
      spec.control(owner, result.value, handOff?.recorded ? operationId : undefined),
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

/*
 * How the queued kinds (plain, fair, write lock, semaphore) wait: each busy reply paces the next
 * poll (by its turn, poll.ts, or by the kind's rule) or, in push mode, is followed by a park
 * (parking.ts, wake.ts). The kind supplies its attempt script, its pacing and its leave.
 */

export const DEFAULT_WAITER_TIMEOUT_MS = QUEUE_DEFAULTS.waiterTimeoutMs;
/** Smallest `waiterTimeoutMs`: a waiter polls every third of it, with room for round trips. */
export const MIN_WAITER_TIMEOUT_MS = QUEUE_DEFAULTS.minWaiterTimeoutMs;

export interface QueueOptions {
  /**
   * How long a waiter keeps its place without polling, in ms (server time). Waiters poll at
   * least every third of it, so only a dead one is dropped, and nobody waits behind it longer.
   * At least 1000.
   * @default 5000
   */
  waiterTimeoutMs?: number;
}

export function checkWaiterTimeout(value: unknown): number {
  return value === undefined
    ? DEFAULT_WAITER_TIMEOUT_MS
    : checkDuration(value, "waiterTimeoutMs", { min: MIN_WAITER_TIMEOUT_MS });
}

/** How a polling waiter paces its attempts. */
export type Pacing<View extends TurnView> =
  | {
      /** By its turn in a lock's queue (TurnPacer). */
      readonly by: "turn";
      /** TurnState.perRelease: 1 where only the head may take it. */
      readonly perRelease: 1 | 2;
      /** TurnPacer's: only where the queue merely paces, so nobody waits behind the dead longer. */
      readonly keepsFarBack: boolean;
    }
  | {
      /** By the kind's own rule (a semaphore's, permits.ts). */
      readonly by: "kind";
      /** Ms to sleep after a busy answer (the kind keeps what it needs of earlier ones). */
      delayMs(view: View): number;
    };

export interface QueuedKind<View extends TurnView = TurnView> {
  attempt(
    owner: string,
    leaseMs: number,
    operationId: string,
    terms: WaiterTerms,
  ): Promise<QueuedAttemptOutcome<View>>;
  readonly pacing: Pacing<View>;
  /**
   * A hold lets its owner's other tasks in (re-entry), so their parks end when one of them takes
   * it; a semaphore's does not.
   */
  readonly reentrant: boolean;
  /**
   * Waiters are served in order (the fair lock): one whose grant's word was lost must ask again
   * within the claim window and replay it, not lose its place to those behind (parkingFor).
   */
  readonly keepsTurn?: boolean;
  /** Leaves the queue and the parked waiters, releasing a hand-off granted meanwhile. */
  leave(owner: string, operationId: string): Promise<void>;
}

/**
 * The attempts of one acquisition of a queued kind. The first failed attempt takes a ticket
 * (unless the call may not wait); a park may go beside an attempt (RecentContention), which the
 * script wakes at once unless it registered the waiter.
 */
export function queuedAttempts<View extends TurnView>(
  runtime: LockRuntime,
  keys: WaitKeys,
  kind: QueuedKind<View>,
  plan: WaitPlan,
  waiterTimeoutMs: number,
): Pick<AcquisitionSpec, "attempt" | "gaveUp"> {
  const { policy } = plan;
  // How the acquisition is woken (parking.ts, wake.ts); undefined: it polls.
  let parking: Park | undefined;
  // The wake channel is chosen once the server has shown which works (parkingFor): until then
  // the waiter polls by its turn.
  let choosing = policy.mode !== "poll";
  const choose = () => {
    const chosen = parkingFor(runtime, keys, plan, kind.keepsTurn);
    if (chosen === NOT_YET) return;
    choosing = false;
    parking = chosen;
    // Its pace no longer asks to be kept longer once it parks (see below).
    if (parking !== undefined) pacer = undefined;
  };
  const placeMs = () => (!plan.mayWait ? 0 : (parking?.placeMs ?? waiterTimeoutMs));
  const { pacing } = kind;
  // Only a polling waiter asks to be kept longer (TurnPacer): a parked one's place is its park's.
  // Made lazily: a parked waiter may never need it.
  let pacer: TurnPacer | undefined;
  if (choosing) choose();
  const nextPollMs = (view: View): number => {
    if (pacing.by === "kind") return pacing.delayMs(view);
    pacer ??= new TurnPacer(
      policy,
      Math.floor(waiterTimeoutMs / 3),
      pacing.perRelease,
      Math.random,
      pacing.keepsFarBack && parking === undefined,
    );
    return pacer.next(view, roundTripMs, Date.now() - (startedAt ?? Date.now()));
  };
  let roundTripMs = 0;
  // The first attempt's send: a blind backoff grows with the time waited since.
  let startedAt: number | undefined;
  // From the first request that may queue or take a hold until a reply says it holds, left or
  // never queued: an attempt whose answer is lost may have done either, so giving up leaves.
  let mayBeQueued = false;
  let requests = 0;
  let lastOperationId = "";

  // An attempt, or the wait on its park.
  const attemptOnce: AcquisitionSpec["attempt"] = async (owner, leaseMs, operationId) => {
    requests += 1;
    lastOperationId = operationId;
    if (choosing) choose();
    // How this attempt waits (a channel chosen after its reply serves the next one).
    const waiting = parking;
    if (waiting?.registered) {
      const parked = await waiting.awaitPark(operationId);
      return parked.kind === "busy" ? { ...parked, why: "park" } : parked;
    }
    const sentAt = Date.now();
    startedAt ??= sentAt;
    // The budget's last leaves the queue itself when busy: exactly `maxPolls` requests.
    const last = plan.mayWait && requests >= policy.maxPolls;
    const parkBeside = waiting?.beforeAttempt(operationId, requests === 1, last, sentAt) ?? false;
    mayBeQueued = true;
    const timeout = placeMs();
    const attempt = kind.attempt(owner, leaseMs, operationId, {
      timeoutMs: last ? -1 : timeout === 0 ? 0 : timeout + (pacer?.keepExtraMs ?? 0),
      roundTripMs,
      claimMs: waiting?.claimMs ?? 0,
      parkBeside,
      ...(waiting === undefined
        ? {}
        : { wakeBy: waiting.wakeBy, registration: waiting.registration, shard: waiting.shard }),
    });
    const granted = await waiting?.grantBeforeAttempt(attempt);
    // A grant heard too late to trust from its word (its window over, or counted from no
    // registration of this acquisition's) leaves the attempt in flight to decide: sent before
    // the grant it registered, sent after it replayed the hold with a lease from its own send
    // (which the next attempt, asked once that lease lapsed, would find gone).
    if (granted?.kind === "acquired") return granted;
    const outcome = await attempt;
    roundTripMs = Date.now() - sentAt;
    // Its reply showed what the server makes of the key-locking flag: the next attempt waits so.
    if (choosing) choose();
    if (outcome.kind !== "busy" || last || timeout === 0) mayBeQueued = false;
    const registered =
      waiting?.active === true &&
      !last &&
      outcome.kind === "busy" &&
      !outcome.operationSpent &&
      outcome.queue.position >= 0;
    // Its turn times the next park, on the channel chosen just now too; `streamOpening`: a
    // stream to wait for before asking again (Listening.sawTurn).
    const streamOpening =
      outcome.kind === "busy" && plan.mayWait && !last
        ? parking?.sawTurn(outcome.queue, sentAt, registered)
        : undefined;
    if (waiting !== undefined) {
      if (registered) {
        waiting.registeredBy(outcome.queue, sentAt, owner);
        return { kind: "busy", holderTtlMs: outcome.holderTtlMs, nextPollMs: 0, why: "park" };
      }
      waiting.notRegistered(outcome.kind === "acquired" && requests === 1);
    }
    if (outcome.kind === "refused") throw outcome.error;
    if (outcome.kind === "acquired") return outcome;
    const spent = outcome.operationSpent ? { operationSpent: true } : {};
    if (streamOpening !== undefined && (await openedWithin(streamOpening, roundTripMs, plan))) {
      // Confirmed: the next attempt, sent at once, registers to be told its turn.
      return {
        kind: "busy",
        holderTtlMs: outcome.holderTtlMs,
        nextPollMs: 0,
        why: "park",
        ...spent,
      };
    }
    return {
      kind: "busy",
      holderTtlMs: outcome.holderTtlMs,
      ...(plan.mayWait
        ? {
            nextPollMs: nextPollMs(outcome.queue),
            why: pacing.by === "kind" ? ("permits" as const) : ("turn" as const),
          }
        : {}),
      ...spent,
    };
  };

  return {
    // However a hold came, it leaves the queue, and the owner's parked siblings re-enter.
    attempt: async (owner, leaseMs, operationId) => {
      const outcome = await attemptOnce(owner, leaseMs, operationId);
      if (outcome.kind === "acquired") {
        mayBeQueued = false;
        if (kind.reentrant) parking?.held(owner);
        parking?.finished();
      }
      return outcome;
    },
    gaveUp: async (owner) => {
      parking?.finished();
      if (!mayBeQueued) return;
      await kind.leave(owner, lastOperationId);
    },
  };
}

/**
 * How long a waiter behind the head waits for its stream's confirmation before it polls instead:
 * a confirmation takes about one round trip (`roundTripMs`, its last attempt's).
 */
export function streamConfirmWaitMs(roundTripMs: number): number {
  return Math.min(STREAM_CONFIRM_WAIT.maxMs, Math.max(STREAM_CONFIRM_WAIT.minMs, 2 * roundTripMs));
}
const STREAM_CONFIRM_WAIT = { minMs: 50, maxMs: 1_000 } as const;

/** Whether `opening` said "open" within streamConfirmWaitMs (and the wait's deadline and signal). */
async function openedWithin(
  opening: Promise<boolean>,
  roundTripMs: number,
  plan: WaitPlan,
): Promise<boolean> {
  const budgetMs = streamConfirmWaitMs(roundTripMs);
  const deadline = Math.min(Date.now() + budgetMs, plan.deadline);
  return settleBy(opening, deadline, budgetMs, plan.signal).catch(() => false);
}

/*
 * The holds a client has live, by lock and owner, so that a wait that times out behind one of
 * them can say it waited for its own client: a nested acquisition or a write after a read taken
 * under another owner (outside one `client.scope()`) never comes free while the caller waits.
 */

/** Per client: lock key → owner → live handles. */
const liveHolds = new WeakMap<LockRuntime, Map<string, Map<string, number>>>();

function holdsOf(runtime: LockRuntime): Map<string, Map<string, number>> {
  let holds = liveHolds.get(runtime);
  if (holds === undefined) {
    holds = new Map();
    liveHolds.set(runtime, holds);
  }
  return holds;
}

function lockKey(runtime: LockRuntime, name: string): string {
  return `${runtime.prefix}:{${name}}`;
}

/** Counts a live handle of `owner` on `name`; the function returned forgets it (once). */
export function noteLocalHold(runtime: LockRuntime, name: string, owner: string): () => void {
  const key = lockKey(runtime, name);
  const holds = holdsOf(runtime);
  const owners = holds.get(key) ?? new Map<string, number>();
  holds.set(key, owners);
  owners.set(owner, (owners.get(owner) ?? 0) + 1);
  let forgotten = false;
  return () => {
    if (forgotten) return;
    forgotten = true;
    const current = holds.get(key);
    const left = (current?.get(owner) ?? 1) - 1;
    if (current === undefined) return;
    if (left > 0) current.set(owner, left);
    else current.delete(owner);
    if (current.size === 0) holds.delete(key);
  };
}

/** Whether the client has a live handle on `name` of an owner other than `owner`. */
export function heldByOtherLocalOwner(runtime: LockRuntime, name: string, owner: string): boolean {
  const owners = holdsOf(runtime).get(lockKey(runtime, name));
  if (owners === undefined) return false;
  for (const holder of owners.keys()) if (holder !== owner) return true;
  return false;
}

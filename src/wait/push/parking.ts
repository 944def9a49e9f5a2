/**
 * The client side of push hand-off (`wait.mode: "push"`) for every kind that parks: the one
 * blocking pop on an acquisition's wake list, when to send it (after a registering busy reply, or
 * beside the first attempt where the client recently waited), how long to wait, what it means.
 * The scripts' side is queue/hand-off.ts.
 */
import { LockBackendError } from "../../errors.js";
import type { OperationContext } from "../../hold/context.js";
import type { LockHandle } from "../../hold/handle.js";
import { grantKeepingParkMs, PARK_PAST_LEASE_MS } from "../../hold/queue/hand-off.js";
import type { LockKeys } from "../../hold/script.js";
import { currentRequest } from "../../platform.js";
import { callBlocking } from "../../transport/call.js";
import { isTransientFailure, shownSafely } from "../../transport/failures.js";
import type { RedisLike } from "../../transport/redis-like.js";
import type { AttemptOutcome, RenewedHold, WaitPlan } from "../attempt.js";
import type { WaitPolicy } from "../policy.js";
import type { TurnView } from "../poll.js";
import { claimRetryInMs } from "../retry.js";
import type {
  BlockingPops,
  Grant,
  ParkedSiblings,
  RecentContention,
  SiblingWatch,
} from "./client-state.js";

/** Parks last at least this long (a blocking pop's timeout 0 would mean forever). */
const MIN_PARK_MS = 10;
/** A pop empty before this share of its timeout did not block (MIN_PARK_MS makes it tell). */
const NOT_BLOCKED_BELOW = 0.5;
/** How long a parked waiter keeps its place after its park ends, to ask again. */
export const PARK_GRACE_MS = 1_000;

/**
 * The longest park: at the head, just past the holder's lease end (a crashed holder hands
 * nothing over); behind it, a claim window past the expected turn, so that a grant to a waiter
 * that died parked is noticed soon. The scripts record the same bound (parkEndLua in
 * queue/hand-off.ts) to know whom a hand-off must tell. With `keepsTurn` (a fair waiter over a
 * subscription) every park lasts at most grantKeepingParkMs, at any place in the queue (the
 * waiters ahead may leave untold); the scripts' record keeps the longer bound, which only decides
 * whether a waiter *behind* a grant is told.
 */
export function parkBoundMs(
  view: TurnView,
  claimMs: number,
  keepsTurn = false,
  leaseMs = Number.POSITIVE_INFINITY,
): number {
  // Any place may be next without a word: the waiters ahead can give up or die unannounced.
  let bound = keepsTurn ? grantKeepingParkMs(claimMs, leaseMs) : Number.POSITIVE_INFINITY;
  if (view.holderTtlMs !== null) {
    bound = Math.min(bound, view.holderTtlMs + view.position * claimMs + PARK_PAST_LEASE_MS);
  }
  return Math.min(bound, expectedTurnMs(view, claimMs) ?? Number.POSITIVE_INFINITY);
}

/**
 * A claim window past the turn the lock's statistics expect for a waiter behind the head: the
 * current hold's rest, then one hold-to-hold cycle per waiter ahead. Null at the head or with no
 * statistics (the holder's lease bounds that park).
 */
export function expectedTurnMs(view: TurnView, claimMs: number): number | null {
  if (view.position < 1 || view.holdMs === null) return null;
  const cycle = view.cycleMs ?? view.holdMs;
  const current = view.locked ? Math.max(0, view.holdMs - (view.heldForMs ?? 0)) : 0;
  return current + view.position * cycle + claimMs;
}

/** "behind": the lock was handed to the waiter ahead, with a claim window of `leaseMs`. */
type ParkEnd =
  | Grant
  | { readonly kind: "behind"; readonly leaseMs: number }
  | { readonly kind: "woken" }
  | { readonly kind: "failed"; readonly error: unknown }
  /** Empty at once, or refused: this backend's pops do not block. */
  | { readonly kind: "notBlocking" };

type BlockingRedis = RedisLike & Required<Pick<RedisLike, "exec">>;

/** The registering busy reply; a grant's lease counts from no earlier than `sentAt`. */
export interface Registration {
  readonly sentAt: number;
  readonly boundAt: number;
  readonly view: TurnView;
}

/** The Workers budget of a request's open connections (HandOffSubscriptions.holdConnection). */
interface ConnectionBudget {
  holdConnection(request?: object): (() => void) | undefined;
}

interface ParkInFlight {
  readonly ended: Promise<ParkEnd>;
  readonly endsAt: number;
  readonly settled: () => boolean;
}

export class Parking {
  readonly wakeBy = "pop";
  /** Pops have no channel. */
  readonly shard = undefined;
  /** Only a subscribed waiter's attempts are numbered (see Listening). */
  readonly registration = undefined;
  readonly #ctx: OperationContext;
  readonly #redis: BlockingRedis;
  readonly #keys: Pick<LockKeys, "lock" | "wake">;
  readonly #plan: WaitPlan;
  readonly #policy: WaitPolicy;
  readonly #contention: RecentContention;
  readonly #parkedSiblings: ParkedSiblings;
  readonly #pops: BlockingPops;
  readonly #connections: ConnectionBudget;
  // The request whose connection budget (Workers) this acquisition's pops count against.
  readonly #request = currentRequest();
  // Its connection for pops while it parks, freed once it is over and its last pop ended.
  #connection: (() => void) | undefined;
  #lastPark: Promise<unknown> | undefined;
  #registered: Registration | undefined;
  // Settles when another acquisition of this owner here came to hold the lock.
  #siblings: SiblingWatch | undefined;
  #inFlight: ParkInFlight | undefined;
  // The latest operation id and its first send: any registration a grant counts from is later.
  #operation: { readonly id: string; readonly firstSentAt: number } | undefined;

  constructor(
    ctx: OperationContext,
    redis: BlockingRedis,
    keys: Pick<LockKeys, "lock" | "wake">,
    plan: WaitPlan,
    shared: {
      readonly contention: RecentContention;
      readonly parkedSiblings: ParkedSiblings;
      readonly blockingPops: BlockingPops;
      readonly subscriptions: ConnectionBudget;
    },
  ) {
    this.#ctx = ctx;
    this.#redis = redis;
    this.#keys = keys;
    this.#plan = plan;
    this.#policy = plan.policy;
    this.#contention = shared.contention;
    this.#parkedSiblings = shared.parkedSiblings;
    this.#pops = shared.blockingPops;
    this.#connections = shared.subscriptions;
  }

  /**
   * False once this client learnt its backend's pops do not block, or (Workers) while the
   * request has no connection left for a pop: it polls then.
   */
  get active(): boolean {
    return this.#pops.served && this.#connection !== undefined;
  }

  /** Whether it may park now: pops serve and it holds a connection for them (taken here). */
  #mayPark(): boolean {
    if (!this.#pops.served) return false;
    this.#connection ??= this.#connections.holdConnection(this.#request);
    return this.#connection !== undefined;
  }

  /** ARGV `claimMs` of the acquire scripts; 0 once it polls (forgetting the registration). */
  get claimMs(): number {
    return this.#mayPark() ? this.#policy.claimMs : 0;
  }

  /** A parked waiter's place: its longest park and the way back to ask again. */
  get placeMs(): number {
    return this.#policy.parkMs + PARK_GRACE_MS;
  }

  /** The last reply registered this waiter: wait on the park next. */
  get registered(): boolean {
    return this.#registered !== undefined && this.active;
  }

  /**
   * Sends the park beside an attempt (not the budget's last) after the first, or at the first
   * where the client recently waited here. Returns ARGV `parkBeside` of the acquire scripts.
   */
  beforeAttempt(operationId: string, first: boolean, last: boolean, sentAt: number): boolean {
    if (this.#operation?.id !== operationId)
      this.#operation = { id: operationId, firstSentAt: sentAt };
    if (!this.#mayPark()) return false;
    if (
      this.#inFlight === undefined &&
      !last &&
      (!first || this.#contention.likely(this.#keys.lock))
    ) {
      this.#inFlight = this.#start(operationId, Number.POSITIVE_INFINITY);
    }
    return this.#inFlight !== undefined;
  }

  /**
   * A grant from the park beside `attempt` that came before the attempt's own answer (it
   * registered the waiter and a release handed over meanwhile): acquired, the hold is this
   * acquisition's and the answer (busy, or a replay of this hold) is ignored; busy (too late to
   * trust), the answer decides. Undefined otherwise.
   */
  async grantBeforeAttempt(attempt: Promise<unknown>): Promise<AttemptOutcome | undefined> {
    const park = this.#inFlight;
    const operation = this.#operation;
    if (park === undefined || operation === undefined) return undefined;
    const answered = attempt.then(
      () => undefined,
      () => undefined,
    );
    const granted = park.ended.then((end) => (end.kind === "granted" ? end : answered));
    const end = await Promise.race([granted, answered]);
    if (end === undefined) return undefined;
    attempt.catch(() => {}); // unawaited where the grant is the hold
    this.#inFlight = undefined;
    this.#contention.saw(this.#keys.lock);
    return grantOutcome(end, operation.firstSentAt);
  }

  /**
   * A pop parks no longer for a far turn (each pop is a request, bounded by its timeout), and
   * needs no stream opened.
   */
  sawTurn(_view: TurnView, _sentAt: number, _registered: boolean): undefined {
    return undefined;
  }

  registeredBy(view: TurnView, sentAt: number, owner: string): void {
    this.#contention.saw(this.#keys.lock);
    this.#registered = { sentAt, boundAt: sentAt + parkBoundMs(view, this.#policy.claimMs), view };
    this.leaveSiblings();
    this.#siblings = this.#parkedSiblings.watch(this.#keys.lock, owner);
  }

  /** `owner` holds the lock through this acquisition: its parked siblings here ask again. */
  held(owner: string): void {
    this.leaveSiblings();
    this.#parkedSiblings.held(this.#keys.lock, owner);
  }

  leaveSiblings(): void {
    this.#siblings?.leave();
    this.#siblings = undefined;
  }

  /**
   * The acquisition is over. A park still open ends by itself (by its timeout, or the `none` its
   * leave pushed); its connection counts until then.
   */
  finished(): void {
    this.leaveSiblings();
    const connection = this.#connection;
    if (connection === undefined) return;
    void (this.#lastPark ?? Promise.resolve()).then(connection);
  }

  /** After a reply that did not register the waiter: the script woke any park in flight. */
  notRegistered(acquiredAtFirst: boolean): void {
    this.#inFlight = undefined;
    if (acquiredAtFirst) this.#contention.freeAtFirstAsk(this.#keys.lock);
  }

  /**
   * Waits on the park up to the registering reply's bound. One sent beside the attempt may
   * outlast it (a dead holder hands nothing over): the waiter then asks again while it is open.
   */
  async awaitPark(operationId: string): Promise<AttemptOutcome> {
    const registered = this.#registered;
    if (registered === undefined) throw new Error("awaitPark before a registering reply");
    this.#registered = undefined;
    const { view, sentAt, boundAt } = registered;
    this.#inFlight ??= this.#start(operationId, boundAt - Date.now());
    const park = this.#inFlight;
    const ended = await Promise.race([
      park.endsAt <= boundAt
        ? park.ended
        : settledWithin(park.ended, Math.max(MIN_PARK_MS, boundAt - Date.now())),
      this.#siblings?.held ?? NEVER,
    ]);
    // Past the bound, or a sibling holds the lock: ask again; the attempt wakes the open park
    // unless it registers this waiter again. A park that ended meanwhile is open no more.
    if (ended === undefined) {
      if (park.settled()) this.#inFlight = undefined;
      return { kind: "busy", holderTtlMs: view.holderTtlMs, nextPollMs: 0 };
    }
    this.#inFlight = undefined;
    if (ended.kind === "failed") throw ended.error;
    if (ended.kind === "notBlocking") {
      this.#pops.notServed();
      return { kind: "busy", holderTtlMs: view.holderTtlMs, nextPollMs: 1 };
    }
    if (ended.kind === "woken") {
      return { kind: "busy", holderTtlMs: view.holderTtlMs, nextPollMs: 1 };
    }
    if (ended.kind === "behind") {
      this.#registered = behind(registered, ended.leaseMs);
      return { kind: "busy", holderTtlMs: ended.leaseMs, nextPollMs: 0 };
    }
    return grantOutcome(ended, sentAt);
  }

  #start(operationId: string, boundMs: number): ParkInFlight {
    const wait = this.#plan;
    const parkMs = Math.max(
      MIN_PARK_MS,
      Math.min(this.#policy.parkMs, wait.deadline - Date.now(), boundMs),
    );
    const sentAt = Date.now();
    const ended = callBlocking(
      this.#redis,
      ["BLPOP", this.#keys.wake(operationId), (parkMs / 1000).toFixed(3)],
      parkMs,
      this.#ctx.retry,
      wait.signal,
      this.#ctx.observer,
    )
      .then((reply): ParkEnd => {
        // Empty long before the timeout: not blocking (Upstash's REST API serves no pops).
        if (reply === null && Date.now() - sentAt < parkMs * NOT_BLOCKED_BELOW) {
          return { kind: "notBlocking" };
        }
        return wakeReply(reply);
      })
      .catch((error: unknown): ParkEnd => {
        // The wait loop ends on the signal and the waiter leaves the queue.
        if (wait.signal?.aborted) return { kind: "woken" };
        // Refused, not a network failure.
        if (!isTransientFailure(error)) return { kind: "notBlocking" };
        return { kind: "failed", error };
      });
    let settled = false;
    void ended.then(() => {
      settled = true;
    });
    this.#lastPark = ended;
    return { ended, endsAt: Date.now() + parkMs, settled: () => settled };
  }
}

export const NEVER: Promise<undefined> = new Promise(() => {});

/**
 * After word that the lock was handed to the waiter ahead with a claim window of `leaseMs`: wait
 * again until that window ends (an unclaimed grant frees the lock then), or `longestParkMs` (a
 * waiter that keeps its turn: grantKeepingParkMs); a grant still counts from the same registration.
 */
export function behind(
  registered: Registration,
  leaseMs: number,
  longestParkMs = Number.POSITIVE_INFINITY,
): Registration {
  return {
    sentAt: registered.sentAt,
    boundAt: Date.now() + Math.min(leaseMs + PARK_PAST_LEASE_MS, longestParkMs),
    view: { ...registered.view, position: 0, locked: true, holderTtlMs: leaseMs },
  };
}

/** A grant to a waiter registered by a request sent at `sentAt` (client clock). */
export function grantOutcome(grant: Grant, sentAt: number, byWord = false): AttemptOutcome {
  const grantedAt = grantedAtOrBefore(sentAt, grant);
  if (grantedAt + grant.leaseMs <= Date.now()) {
    // The claim window may have run out (a slow answer, a late word): the next attempt, same
    // operation id, replays the hold with a lease from its own send, or finds it gone.
    return { kind: "busy", holderTtlMs: null, nextPollMs: 0 };
  }
  return {
    kind: "acquired",
    fencingToken: grant.fencingToken,
    handOff: { leaseMs: grant.leaseMs, grantedAt, ...(byWord ? { recorded: true } : {}) },
  };
}

/**
 * No later than the lease's start on the server, client clock: the registration reached Redis
 * after `sentAt`, the grant came `sinceRegistrationMs` later by the server's `TIME`; but Redis
 * counts the lease from the script's start (time is frozen in a script), which can be in the
 * millisecond before that reading: without the 1 ms a hold is trusted 1 ms too long.
 */
export function grantedAtOrBefore(
  sentAt: number,
  grant: { readonly sinceRegistrationMs: number },
): number {
  return sentAt + Math.max(0, grant.sinceRegistrationMs - 1);
}

/** `promise`'s value if it settles within `ms`, else undefined (it keeps running). */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, ms));
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/**
 * Null: timed out; else `[key, message]`, message `grant <fence> <lease ms> <ms since
 * registration>`, `behind <lease ms>` or `none` (an attempt beside it did not register it).
 */
function wakeReply(reply: unknown): ParkEnd {
  if (reply === null) return { kind: "woken" };
  const message = Array.isArray(reply) ? reply[1] : undefined;
  if (message === "none") return { kind: "woken" };
  const behind = typeof message === "string" ? /^behind (\d+)$/.exec(message) : null;
  if (behind !== null) return { kind: "behind", leaseMs: Number(behind[1]) };
  const match = typeof message === "string" ? /^grant (\d+) (\d+) (\d+)$/.exec(message) : null;
  if (match === null) {
    throw new LockBackendError(
      `The wake list of a parked waiter held an unexpected reply: ${shownSafely(reply)}.`,
    );
  }
  return {
    kind: "granted",
    fencingToken: Number(match[1]),
    leaseMs: Number(match[2]),
    sinceRegistrationMs: Number(match[3]),
  };
}

/* A hand-off grants a claim window, not a lease: the hold confirms its lease in it, or is lost. */

/** A handed-off hold whose own lease is still to be confirmed. */
export interface PendingClaim {
  readonly handle: LockHandle;
  /** Fixed, counted from the grant, or the watchdog's. */
  readonly leaseMs: number;
  /** The earliest moment the grant can have been made (client clock). */
  readonly acquiredAt: number;
  readonly claimMs: number;
  /** The kind's renew. */
  renew(leaseMs: number, hold: RenewedHold): Promise<boolean>;
  failed(error: unknown): void;
  /** The watchdog takes over from `confirmedAt`. */
  confirmed(confirmedAt: number): void;
}

/**
 * In watchdog mode before returning (a watchdog elsewhere may renew past this invocation, whose
 * timers would not confirm in time). With a fixed lease, at half the window: most holds end
 * sooner, and their release then costs nothing more.
 */
export async function confirmClaim(claim: PendingClaim): Promise<void> {
  if (!claim.handle.renewing) {
    confirmLater(claim, claim.acquiredAt + claim.claimMs / 2 - Date.now());
    return;
  }
  while ((await claimLease(claim)) === "failed") {
    const retryIn = claimRetryInMs(claim.handle.expiresAt);
    if (retryIn === undefined) return;
    await new Promise((resolve) => setTimeout(resolve, retryIn));
  }
}

/** claimLease in `delayMs`, again while it fails, unless the handle is released first. */
function confirmLater(claim: PendingClaim, delayMs: number): void {
  const timer = setTimeout(
    async () => {
      if ((await claimLease(claim)) !== "failed") return;
      const retryIn = claimRetryInMs(claim.handle.expiresAt);
      if (retryIn !== undefined) confirmLater(claim, retryIn);
    },
    Math.max(0, delayMs),
  );
  (timer as { unref?: () => void }).unref?.();
  claim.handle.attachWatchdog(() => clearTimeout(timer));
}

/** "failed": may be tried again while the window lasts. */
async function claimLease(claim: PendingClaim): Promise<"done" | "failed"> {
  const { handle, leaseMs, acquiredAt, claimMs } = claim;
  if (handle.released) return "done";
  const sentAt = Date.now();
  const lease = handle.renewing ? leaseMs : Math.max(1, acquiredAt + leaseMs - sentAt);
  let held: boolean;
  try {
    // A fixed lease counts from the grant: the server anchors it there (see lock.extend).
    const { fencingToken } = handle;
    held = await (handle.renewing
      ? claim.renew(lease, { fencingToken })
      : claim.renew(lease, { fencingToken, claim: { claimMs, grantLeaseMs: leaseMs } }));
  } catch (error) {
    claim.failed(error);
    return handle.released ? "done" : "failed";
  }
  if (handle.released) return "done";
  if (!held) {
    handle.claimFailed("it was gone when its claim window was confirmed");
    return "done";
  }
  // Lost meanwhile (window out before the answer): what it found may be a later hold of this owner.
  if (handle.signal.aborted) return "done";
  handle.claimed(sentAt, lease);
  if (handle.renewing) claim.confirmed(sentAt);
  return "done";
}

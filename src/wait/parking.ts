/**
 * The client side of push hand-off (`wait.mode: "push"`), shared by every kind that parks (plain,
 * fair and write locks): the one blocking pop in flight on an acquisition's wake list, when to
 * send it (after a busy reply that registered the waiter, or beside the first attempt where the
 * client recently had to wait: RecentContention in client-state.ts), how long to wait on it, and what its reply
 * means. The scripts' side is queue/hand-off.ts.
 */
import { LockBackendError } from "../errors.js";
import type { OperationContext } from "../locks/context.js";
import type { LockHandle } from "../locks/handle.js";
import type { LockKeys } from "../locks/keys.js";
import { PARK_PAST_LEASE_MS } from "../locks/queue/hand-off.js";
import type { LockRuntime } from "../locks/runtime.js";
import { callBlocking } from "../transport/call.js";
import { isTransientFailure, shownSafely } from "../transport/failures.js";
import { runsUnderKeyLocking } from "../transport/key-locking.js";
import { canBlock, type RedisLike } from "../transport/redis-like.js";
import type { AttemptOutcome, RenewedHold, WaitPlan } from "./attempt.js";
import type { BlockingPops, ParkedSiblings, RecentContention } from "./client-state.js";
import type { WaitPolicy } from "./policy.js";
import { claimRetryInMs } from "./retry.js";
import type { TurnView } from "./turn.js";

/** Parks last at least this long (a blocking pop's timeout 0 would mean forever). */
const MIN_PARK_MS = 10;
/**
 * A pop that comes back empty before this fraction of its timeout did not block. Parks last at
 * least MIN_PARK_MS, so a backend that answers at once is told from one that timed out.
 */
const NOT_BLOCKED_BELOW = 0.5;
/** How long a parked waiter keeps its place after its park ends, to ask again (ms). */
export const PARK_GRACE_MS = 1_000;

/**
 * How long a waiter that got `view` parks at most: at the head, until just after the holder's
 * lease ends (a holder that crashed hands nothing over); behind it, until well after its turn is
 * expected (the claim window after it), so that a grant to a waiter that died while parked is
 * noticed soon after its claim window ran out. The acquire scripts record the same bound with
 * the registration (parkEndLua in queue/hand-off.ts), to know whom a hand-off must tell.
 */
export function parkBoundMs(view: TurnView, claimMs: number): number {
  let bound = Number.POSITIVE_INFINITY;
  if (view.holderTtlMs !== null) {
    bound = view.holderTtlMs + view.position * claimMs + PARK_PAST_LEASE_MS;
  }
  if (view.position >= 1 && view.holdMs !== null) {
    const cycle = view.cycleMs ?? view.holdMs;
    const current = view.locked ? Math.max(0, view.holdMs - (view.heldForMs ?? 0)) : 0;
    bound = Math.min(bound, current + view.position * cycle + claimMs);
  }
  return bound;
}

/**
 * How a park ended: a grant (the waiter holds the lock), word that the lock was handed to the
 * waiter ahead for `leaseMs` (its claim window), woken without either, or failed.
 */
type ParkEnd =
  | {
      readonly kind: "granted";
      readonly fencingToken: number;
      readonly leaseMs: number;
      readonly sinceRegistrationMs: number;
    }
  | { readonly kind: "behind"; readonly leaseMs: number }
  | { readonly kind: "woken" }
  | { readonly kind: "failed"; readonly error: unknown }
  /** The pop answered at once with nothing, or was refused: this backend's pops do not block. */
  | { readonly kind: "notBlocking" };

type BlockingRedis = RedisLike & Required<Pick<RedisLike, "exec">>;

/** The parking of an acquisition that may wait in push mode (undefined otherwise: it polls). */
export function parkingFor(
  runtime: LockRuntime,
  keys: LockKeys,
  plan: WaitPlan,
): Parking | undefined {
  const { ctx } = runtime;
  if (!plan.mayWait || plan.policy.mode !== "push" || !canBlock(ctx.redis)) return undefined;
  // Where pops do not block, push mode polls (see BlockingPops); so it does where scripts are
  // known to run under Upstash's per-key locking, whose scripts leave the hand-off out. While
  // that is a guess (a client's first script), it parks: a plain Redis refuses the flag before
  // the park, and where pops answer at once BlockingPops turns the next wait to polling.
  if (!runtime.blockingPops.served || runsUnderKeyLocking(ctx.redis)) return undefined;
  return new Parking(ctx, ctx.redis, keys, plan, runtime);
}

/**
 * The busy reply that registered a waiter as parked: when its request was sent (a grant's lease
 * counts from no earlier: grantedAtOrBefore), when its park should end at the latest (client
 * clock), and the view it gave.
 */
interface Registration {
  readonly sentAt: number;
  readonly boundAt: number;
  readonly view: TurnView;
}

/** A park in flight, when its timeout lapses (client clock), and whether it has ended. */
interface ParkInFlight {
  readonly ended: Promise<ParkEnd>;
  readonly endsAt: number;
  readonly settled: () => boolean;
}

/** The parking of one acquisition. */
export class Parking {
  readonly #ctx: OperationContext;
  readonly #redis: BlockingRedis;
  readonly #keys: LockKeys;
  readonly #plan: WaitPlan;
  readonly #policy: WaitPolicy;
  readonly #contention: RecentContention;
  readonly #siblings: ParkedSiblings;
  readonly #pops: BlockingPops;
  // The busy reply that registered this waiter as parked.
  #registered: Registration | undefined;
  // Settles (undefined) when another acquisition of this owner here came to hold the lock.
  #siblingHeld: Promise<undefined> = new Promise(() => {});
  #leaveSiblings: (() => void) | undefined;
  // The park in flight on this acquisition's wake list.
  #inFlight: ParkInFlight | undefined;
  // The operation id of the latest attempt, and when its first attempt was sent: any
  // registration a grant counts from was made no earlier.
  #operation: { readonly id: string; readonly firstSentAt: number } | undefined;

  constructor(
    ctx: OperationContext,
    redis: BlockingRedis,
    keys: LockKeys,
    plan: WaitPlan,
    shared: {
      readonly contention: RecentContention;
      readonly parkedSiblings: ParkedSiblings;
      readonly blockingPops: BlockingPops;
    },
  ) {
    this.#ctx = ctx;
    this.#redis = redis;
    this.#keys = keys;
    this.#plan = plan;
    this.#policy = plan.policy;
    this.#contention = shared.contention;
    this.#siblings = shared.parkedSiblings;
    this.#pops = shared.blockingPops;
  }

  /**
   * False once this client learnt that its backend's pops do not block: the acquisition then
   * polls, registering as parked no more.
   */
  get active(): boolean {
    return this.#pops.served;
  }

  /**
   * The claim window this waiter registers with (ARGV `claimMs` of the acquire scripts); 0 once
   * it polls (the attempt then forgets its registration).
   */
  get claimMs(): number {
    return this.active ? this.#policy.claimMs : 0;
  }

  /** How long a parked waiter's place lasts: its longest park and the way back to ask again. */
  get placeMs(): number {
    return this.#policy.parkMs + PARK_GRACE_MS;
  }

  /** True when the last reply registered this waiter: the next step is to wait on the park. */
  get registered(): boolean {
    return this.#registered !== undefined && this.active;
  }

  /**
   * Before an attempt: sends the park beside it unless it is the budget's last, where this is
   * not the acquisition's first attempt or the client recently waited on this lock. Returns
   * whether a park is in flight (ARGV `parkBeside` of the acquire scripts).
   */
  beforeAttempt(operationId: string, first: boolean, last: boolean, sentAt: number): boolean {
    if (this.#operation?.id !== operationId)
      this.#operation = { id: operationId, firstSentAt: sentAt };
    if (!this.active) return false;
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
   * Awaits `attempt` when a park is in flight beside it (else returns undefined at once), unless
   * the park comes back with a grant first:
   * the attempt registered the waiter and a release handed it the lock while the attempt's own
   * answer is still on its way (or slower). Then the hold is this acquisition's at once, and
   * the attempt's answer, whatever it says (busy, or a replay of this very hold), is ignored.
   * Returns undefined when the attempt answered first (or the park ended without a grant).
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
    attempt.catch(() => {}); // its answer no longer matters
    this.#inFlight = undefined;
    this.#contention.saw(this.#keys.lock);
    return this.#acquiredBy(end, operation.firstSentAt);
  }

  /** After a busy reply that registered `owner`'s waiter as parked (sent at `sentAt`). */
  registeredBy(view: TurnView, sentAt: number, owner: string): void {
    this.#contention.saw(this.#keys.lock);
    this.#registered = { sentAt, boundAt: sentAt + parkBoundMs(view, this.#policy.claimMs), view };
    this.leaveSiblings();
    let nudge = () => {};
    this.#siblingHeld = new Promise((resolve) => {
      nudge = () => resolve(undefined);
    });
    this.#leaveSiblings = this.#siblings.join(this.#keys.lock, owner, nudge);
  }

  /** `owner` holds the lock through this acquisition: its parked siblings here ask again. */
  held(owner: string): void {
    this.leaveSiblings();
    this.#siblings.held(this.#keys.lock, owner);
  }

  /** This acquisition no longer waits on a park (it holds the lock, or gave up). */
  leaveSiblings(): void {
    this.#leaveSiblings?.();
    this.#leaveSiblings = undefined;
  }

  /**
   * After a reply that did not register the waiter: the script woke the park in flight, if any,
   * which then ends on its own. `acquiredAtFirst`: that reply took the lock at the first ask.
   */
  notRegistered(acquiredAtFirst: boolean): void {
    this.#inFlight = undefined;
    if (acquiredAtFirst) this.#contention.freeAtFirstAsk(this.#keys.lock);
  }

  /**
   * Waits on the park (sending it now if none is in flight) for at most the bound the
   * registering reply sets. A park sent beside the attempt may outlast that bound (a holder that
   * died hands nothing over): the waiter then asks again while it stays open.
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
      this.#siblingHeld,
    ]);
    // Past the bound, or a sibling holds the lock: ask again while the park stays open (the
    // attempt, sent beside it, wakes it unless it registers this waiter again). A park that
    // ended meanwhile (word of a hand-off ahead, say) is open no more.
    if (ended === undefined) {
      if (park.settled()) this.#inFlight = undefined;
      return { kind: "busy", holderTtlMs: view.holderTtlMs, nextPollMs: 0 };
    }
    this.#inFlight = undefined;
    if (ended.kind === "failed") throw ended.error;
    if (ended.kind === "notBlocking") {
      // From now on this client polls: the next attempt forgets the registration.
      this.#pops.notServed();
      return { kind: "busy", holderTtlMs: view.holderTtlMs, nextPollMs: 1 };
    }
    if (ended.kind === "woken") {
      return { kind: "busy", holderTtlMs: view.holderTtlMs, nextPollMs: 1 };
    }
    if (ended.kind === "behind") {
      // The waiter ahead was handed the lock: park again until its claim window ends (a grant
      // to it that nobody claims frees the lock then). The registration is the same one, and a
      // grant still counts from when it was sent.
      this.#registered = {
        sentAt,
        boundAt: Date.now() + ended.leaseMs + PARK_PAST_LEASE_MS,
        view: { ...view, position: 0, locked: true, holderTtlMs: ended.leaseMs },
      };
      return { kind: "busy", holderTtlMs: ended.leaseMs, nextPollMs: 0 };
    }
    return this.#acquiredBy(ended, sentAt);
  }

  /** The outcome of a grant to a waiter whose registering request was sent at `sentAt`. */
  #acquiredBy(grant: Extract<ParkEnd, { kind: "granted" }>, sentAt: number): AttemptOutcome {
    const grantedAt = grantedAtOrBefore(sentAt, grant);
    if (grantedAt + grant.leaseMs <= Date.now()) {
      // The grant reached this waiter after its claim window may have run out (a slow answer):
      // the hold may be gone, and the lock someone else's. The next attempt (same operation id)
      // asks Redis: it replays the hold with a lease from its own send, or finds it gone.
      return { kind: "busy", holderTtlMs: null, nextPollMs: 0 };
    }
    return {
      kind: "acquired",
      fencingToken: grant.fencingToken,
      handOff: { leaseMs: grant.leaseMs, grantedAt },
    };
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
        // Nothing, long before the pop's timeout: the backend answered at once (Upstash's REST
        // API serves no blocking pops) instead of blocking.
        if (reply === null && Date.now() - sentAt < parkMs * NOT_BLOCKED_BELOW) {
          return { kind: "notBlocking" };
        }
        return wakeReply(reply);
      })
      .catch((error: unknown): ParkEnd => {
        // Aborted: the wait loop ends on the signal and the waiter leaves the queue.
        if (wait.signal?.aborted) return { kind: "woken" };
        // Refused (not a network failure): the backend does not serve the pop.
        if (!isTransientFailure(error)) return { kind: "notBlocking" };
        return { kind: "failed", error };
      });
    let settled = false;
    void ended.then(() => {
      settled = true;
    });
    return { ended, endsAt: Date.now() + parkMs, settled: () => settled };
  }
}

/**
 * A moment no later than the start of the hold's lease on the server, on this client's clock:
 * the registration was sent at `sentAt` and reached Redis after that; the grant came
 * `sinceRegistrationMs` later by the server's clock (`TIME`, read in the grant script), but
 * Redis counts the lease from the script's start (its time is frozen while a script runs),
 * which can fall in the millisecond before that reading. The hold's lease (and its claim
 * window) counts from here; without the 1 ms a woken waiter can trust its hold 1 ms too long.
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
 * A park's reply: null when it timed out; else `[key, message]` with `grant <fence> <lease ms>
 * <ms since registration>` (a hand-off), `behind <lease ms>` (a hand-off to the waiter ahead) or
 * `none` (an attempt beside it did not register it).
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

/*
 * The claim. A push hand-off grants the woken waiter a claim window, not its own lease: the hold
 * confirms its lease (a fixed one counted from the grant, or the watchdog's) before the window
 * ends, or is lost.
 */

/** A handed-off hold whose own lease is still to be confirmed. */
export interface PendingClaim {
  readonly handle: LockHandle;
  /** The hold's own lease: fixed, counted from the grant, or the watchdog's. */
  readonly leaseMs: number;
  /** The earliest moment the grant can have been made (client clock). */
  readonly acquiredAt: number;
  /** The claim window the hand-off granted. */
  readonly claimMs: number;
  /** Re-arms the hold (the kind's renew). */
  renew(leaseMs: number, hold: RenewedHold): Promise<boolean>;
  /** A confirmation request failed. */
  failed(error: unknown): void;
  /** A watchdog-mode hold was confirmed at `confirmedAt`: the watchdog takes over from there. */
  confirmed(confirmedAt: number): void;
}

/**
 * Confirms the claim. In watchdog mode, before returning (a watchdog elsewhere, a Durable Object,
 * renews holds that outlive this invocation, whose timers would not confirm the claim in time).
 * With a fixed lease, later: most holds end within half the claim window, and their release
 * confirms nothing and costs nothing more; a longer one confirms its lease then.
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

/** Runs claimLease in `delayMs` (again, if it fails), unless the handle is released first. */
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

/** One confirmation. "failed": the request failed, and may be tried again while the window lasts. */
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
  // Lost meanwhile (the window ran out before the answer came): what the claim found may be a
  // later hold of the same owner, not this one.
  if (handle.signal.aborted) return "done";
  handle.claimed(sentAt, lease);
  if (handle.renewing) claim.confirmed(sentAt);
  return "done";
}

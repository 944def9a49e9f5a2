/**
 * Push mode's choice, per acquisition, of how a hand-off reaches the waiter: a blocking pop
 * (parking.ts), a subscription (Listening, below), or neither (it polls). docs/push.md.
 */
import { grantKeepingParkMs } from "../../hold/queue/hand-off.js";
import type { LockKeys } from "../../hold/script.js";
import { currentRequest } from "../../platform.js";
import { keyLockingKnown, runsUnderKeyLocking } from "../../transport/call.js";
import { canBlock, canSubscribe } from "../../transport/redis-like.js";
import type { AttemptOutcome, WaitPlan } from "../attempt.js";
import type { TurnView } from "../poll.js";
import type { LockRuntime } from "../runtime.js";
import type {
  Grant,
  HandOffStream,
  Mailbox,
  SiblingWatch,
  SubscribingRedis,
} from "./client-state.js";
import {
  behind,
  expectedTurnMs,
  grantOutcome,
  NEVER,
  PARK_GRACE_MS,
  Parking,
  parkBoundMs,
  type Registration,
} from "./parking.js";

/** How one acquisition is woken in push mode. */
export type Park = Parking | Listening;

/**
 * What push mode needs of a kind's keys: the name its client-wide state goes by (`lock`), its
 * hand-off channels, and the wake lists of waiters on a blocking pop, where the kind's hand-off
 * pushes to them (a semaphore's announces on its channels only).
 */
export type WaitKeys = Pick<LockKeys, "lock" | "handOffChannels"> & Partial<Pick<LockKeys, "wake">>;

/** parkingFor's answer while the server has not shown which channel works: ask again later. */
export const NOT_YET = "notYet";

/**
 * Undefined where the acquisition polls. `keepsTurn`: the kind serves its waiters in order (the
 * fair lock), so a subscribed waiter next in line parks within the claim window (Listening).
 * NOT_YET where `wakeBy: "auto"` must choose between a pop and a subscription before the server
 * has shown whether it runs scripts under Upstash's per-key locking: the first attempt's reply
 * shows it (the first script asks with the flag), so the acquisition waits by its turn until
 * then and asks again; a guess would park on a pop that the flagged hand-off never fills (a loopback
 * URL on the local server's `upstash` profile looks like any Redis behind a proxy).
 */
export function parkingFor(
  runtime: LockRuntime,
  keys: WaitKeys,
  plan: WaitPlan,
  keepsTurn = false,
): Park | undefined | typeof NOT_YET {
  const { ctx } = runtime;
  const { redis } = ctx;
  const { mode, wakeBy } = plan.policy;
  if (!plan.mayWait || mode === "poll") return undefined;
  // No pop under Upstash's per-key locking (a hand-off there cannot name a waiter's list).
  const { wake } = keys;
  const popsMayServe = wake !== undefined && canBlock(redis) && runtime.blockingPops.served;
  if (wakeBy === "auto" && popsMayServe && !keyLockingKnown(redis)) return NOT_YET;
  const popsServe = popsMayServe && !runsUnderKeyLocking(redis);
  if (wakeBy === "pop" || (wakeBy === "auto" && popsServe)) {
    return popsServe
      ? new Parking(ctx, redis, { lock: keys.lock, wake }, plan, runtime)
      : undefined;
  }
  // A subscription where pops do not serve (Upstash): polling once streams keep failing.
  if (!canSubscribe(redis) || !runtime.subscriptions.usable) return undefined;
  return new Listening(runtime, redis, keys, plan, keepsTurn);
}

/*
 * Push hand-off over a subscription (`wait.wakeBy: "subscription"`, the channel Upstash serves):
 * the waiter registers as parked only once its stream to the lock's
 * hand-off channel is confirmed, so no word can be published before it listens; a release hands
 * it the lock inside Redis and publishes the grant (queue/hand-off.ts). A word that never comes
 * (lost, a stream whose end went unheard) costs the park's bound: then the waiter asks again, and its
 * attempt replays a grant made meanwhile (takeAnnouncedGrant) or registers afresh.
 */

/** Streams one acquisition may open (the second after the first was lost); then it polls. */
const STREAMS_PER_ACQUISITION = 2;

/**
 * A park on a subscription lasts up to this share of the time waited, when that is more than
 * `parkMs`: the attempts of a long wait grow with the logarithm of its length (a park is no
 * request here, unlike a pop, so no request timeout bounds it). The price: a word lost, or a
 * stream whose end went unheard, costs the waiter up to this share of its wait so far.
 */
export const WAITED_PARK_SHARE = 0.5;
/**
 * The longest park drawn from the time waited (`parkMs` may be longer): a dead waiter's
 * registration, kept as long as its park, is not kept for hours.
 */
export const WAITED_PARK_CAP_MS = 30_000;

/**
 * The longest park over a subscription after `waitedMs` of waiting: `parkMs`, or longer where
 * the wait has earned it: a share of the time waited, or the time to the turn the last answer
 * expected (`turnInMs`, expectedTurnMs: a waiter far back in a long queue parks to its turn
 * rather than asking again every `parkMs`), the latter within the same share of the whole wait
 * (`waitMs`), so a word lost costs at most that share and leaves time to ask again. A fair
 * waiter's parks stay within its grant's window anyway (parkBoundMs), so its limit stays
 * `parkMs`.
 */
export function subscriptionParkLimitMs(
  parkMs: number,
  waitedMs: number,
  keepsTurn: boolean,
  turnInMs = 0,
  waitMs = Number.POSITIVE_INFINITY,
): number {
  if (keepsTurn) return parkMs;
  const drawn = Math.floor(WAITED_PARK_SHARE * Math.max(0, waitedMs));
  const toTurn = Math.floor(Math.min(turnInMs, WAITED_PARK_SHARE * waitMs));
  return Math.max(parkMs, Math.min(WAITED_PARK_CAP_MS, Math.max(drawn, toTurn)));
}

export class Listening {
  readonly wakeBy = "sub";
  readonly #runtime: LockRuntime;
  readonly #redis: SubscribingRedis;
  readonly #keys: Pick<LockKeys, "lock" | "handOffChannels">;
  readonly #plan: WaitPlan;
  #stream: HandOffStream | undefined;
  #streamsOpened = 0;
  #mailbox: { readonly operationId: string; readonly box: Mailbox } | undefined;
  // The attempt in flight was sent listening (so a registration by it is told of a hand-off).
  #listening = false;
  #registered: Registration | undefined;
  #siblings: SiblingWatch | undefined;
  // Attempts sent listening, by number: a grant's word names the one it counts from, and is
  // timed from that attempt's send (an earlier or later registration would time it wrongly).
  readonly #sentAt = new Map<number, number>();
  #attempts = 0;
  // The request whose stream budget (Workers) this acquisition's stream counts against.
  readonly #request = currentRequest();
  /** The shard of the lock's hand-off channels this waiter listens on (ARGV `wakeBy`). */
  readonly shard: number;

  // A fair waiter parks within its grant wherever it is queued (grantKeepingParkMs): a lost word
  // costs it no turn.
  readonly #keepsTurn: boolean;
  // The first attempt's send, and the longest park after the attempt in flight (see
  // WAITED_PARK_SHARE); the place an attempt keeps lasts as long.
  #firstSentAt: number | undefined;
  #parkLimitMs: number;
  // When the last busy answer expected this waiter's turn (client clock; expectedTurnMs).
  #turnAt: number | undefined;

  constructor(
    runtime: LockRuntime,
    redis: SubscribingRedis,
    keys: Pick<LockKeys, "lock" | "handOffChannels">,
    plan: WaitPlan,
    keepsTurn = false,
  ) {
    this.#keepsTurn = keepsTurn;
    this.#runtime = runtime;
    this.#redis = redis;
    this.#keys = keys;
    this.#plan = plan;
    this.#parkLimitMs = plan.policy.parkMs;
    this.shard = runtime.subscriptions.shard();
  }

  /** The attempt in flight was sent listening on an open stream. */
  get active(): boolean {
    return this.#listening;
  }

  /** ARGV `claimMs`: 0 (poll, unregistered as parked) unless this attempt listens. */
  get claimMs(): number {
    return this.#listening ? this.#plan.policy.claimMs : 0;
  }

  get placeMs(): number {
    return this.#parkLimitMs + PARK_GRACE_MS;
  }

  get registered(): boolean {
    return this.#registered !== undefined;
  }

  /**
   * Opens the stream at the first busy answer (or at once where the client recently waited
   * here), and listens for this attempt's word once the server confirmed it. Returns ARGV
   * `parkBeside`: never, nothing is sent beside.
   */
  beforeAttempt(operationId: string, first: boolean, last: boolean, sentAt: number): boolean {
    this.#attempts += 1;
    this.#listening = false;
    this.#firstSentAt ??= sentAt;
    this.#parkLimitMs = subscriptionParkLimitMs(
      this.#plan.policy.parkMs,
      sentAt - this.#firstSentAt,
      this.#keepsTurn,
      this.#turnAt === undefined ? 0 : this.#turnAt - sentAt,
      this.#plan.waitMs,
    );
    const stream = this.#openStream(first);
    if (stream === undefined || !stream.open || last) return false;
    if (this.#mailbox?.operationId !== operationId) {
      if (this.#mailbox !== undefined) stream.drop(this.#mailbox.operationId);
      this.#mailbox = { operationId, box: stream.mailbox(operationId) };
    }
    this.#listening = true;
    this.#sentAt.set(this.#attempts, sentAt);
    return false;
  }

  /** ARGV `wakeBy`'s number: this attempt's. */
  get registration(): number {
    return this.#attempts;
  }

  /** A grant, timed from the attempt that registered the waiter for it. */
  #granted(word: Grant): AttemptOutcome {
    const sentAt = this.#sentAt.get(word.registration ?? -1);
    // Unknown: not a registration of this acquisition's; its next attempt asks Redis instead.
    if (sentAt === undefined) return { kind: "busy", holderTtlMs: null, nextPollMs: 0 };
    return grantOutcome(word, sentAt, true);
  }

  #openStream(first: boolean): HandOffStream | undefined {
    const { subscriptions, contention } = this.#runtime;
    if (this.#stream !== undefined && !this.#stream.lost) return this.#stream;
    if (!subscriptions.usable || this.#streamsOpened >= STREAMS_PER_ACQUISITION) return undefined;
    // An uncontended first ask costs no stream.
    if (first && !contention.likely(this.#keys.lock)) return undefined;
    this.#leaveStream();
    const channel = this.#keys.handOffChannels[this.shard] ?? this.#keys.handOffChannels[0]!;
    const stream = subscriptions.stream(this.#redis, channel, this.#request);
    if (stream === undefined) return undefined;
    stream.join();
    this.#streamsOpened += 1;
    this.#stream = stream;
    return stream;
  }

  /**
   * A grant heard before the answer of the attempt in flight. Acquired: the hold is this
   * acquisition's and that answer is ignored; busy (too late to trust): the answer decides.
   */
  async grantBeforeAttempt(attempt: Promise<unknown>): Promise<AttemptOutcome | undefined> {
    const mailbox = this.#mailbox?.box;
    if (!this.#listening || mailbox === undefined) return undefined;
    const answered = attempt.then(
      () => undefined,
      () => undefined,
    );
    const word = await mailbox.next(Number.POSITIVE_INFINITY, answered);
    if (word === undefined) return undefined;
    if (word.kind !== "granted") {
      mailbox.putBack(word);
      return undefined;
    }
    attempt.catch(() => {}); // unawaited where the grant is the hold
    this.#runtime.contention.saw(this.#keys.lock);
    return this.#granted(word);
  }

  registeredBy(view: TurnView, sentAt: number, owner: string): void {
    this.#runtime.contention.saw(this.#keys.lock);
    this.#registered = {
      sentAt,
      boundAt:
        sentAt + parkBoundMs(view, this.#plan.policy.claimMs, this.#keepsTurn, this.#plan.leaseMs),
      view,
    };
    this.leaveSiblings();
    this.#siblings = this.#runtime.parkedSiblings.watch(this.#keys.lock, owner);
  }

  notRegistered(acquiredAtFirst: boolean): void {
    if (acquiredAtFirst) this.#runtime.contention.freeAtFirstAsk(this.#keys.lock);
  }

  /**
   * A busy answer, registering or not: its turn times the next attempt's park (timed from the
   * attempt's send, as the server's view is a little younger, so the turn comes early rather than
   * late). One that did not register opens the stream now, not with the next attempt (which would
   * go out before the server confirmed it, and register nothing); behind the head, the waiter asks
   * again once it is confirmed (returned: when it settles), as its turn is not next.
   */
  sawTurn(view: TurnView, sentAt: number, registered: boolean): Promise<boolean> | undefined {
    const turnMs = expectedTurnMs(view, this.#plan.policy.claimMs);
    this.#turnAt = turnMs === null ? undefined : sentAt + turnMs;
    if (registered || view.position < 0) return undefined;
    const stream = this.#openStream(false);
    if (stream === undefined || stream.open || view.position < 1) return undefined;
    return stream.settled.then(() => stream.open);
  }

  /** Waits for this waiter's word up to its park's bound; then it asks again. */
  async awaitPark(_operationId: string): Promise<AttemptOutcome> {
    const registered = this.#registered;
    const mailbox = this.#mailbox?.box;
    if (registered === undefined || mailbox === undefined) {
      throw new Error("awaitPark before a registering reply");
    }
    this.#registered = undefined;
    const { view, boundAt } = registered;
    // A sibling holding the lock, or the caller's signal, ends the wait early.
    const aborted = abortWatch(this.#plan.signal);
    const interrupted = Promise.race([this.#siblings?.held ?? NEVER, aborted.happened]);
    // A word lost costs no more than the park's limit (subscriptionParkLimitMs).
    const deadline = Math.min(boundAt, Date.now() + this.#parkLimitMs, this.#plan.deadline);
    const word = await mailbox.next(deadline - Date.now(), interrupted).finally(aborted.stop);
    // `opened` is a latch's word: a lock's channel never carries it.
    if (word === undefined || word.kind === "lost" || word.kind === "opened") {
      // Past the bound, a sibling holds the lock, or the stream ended: ask again (a grant made
      // meanwhile is replayed by the attempt).
      return { kind: "busy", holderTtlMs: view.holderTtlMs, nextPollMs: word ? 1 : 0 };
    }
    if (word.kind === "behind") {
      const { claimMs } = this.#plan.policy;
      const longest = this.#keepsTurn
        ? grantKeepingParkMs(claimMs, this.#plan.leaseMs)
        : Number.POSITIVE_INFINITY;
      this.#registered = behind(registered, word.leaseMs, longest);
      return { kind: "busy", holderTtlMs: word.leaseMs, nextPollMs: 0 };
    }
    return this.#granted(word);
  }

  held(owner: string): void {
    this.leaveSiblings();
    this.#runtime.parkedSiblings.held(this.#keys.lock, owner);
  }

  leaveSiblings(): void {
    this.#siblings?.leave();
    this.#siblings = undefined;
  }

  /** The acquisition is over: it reads no more words (the stream may linger for the next). */
  finished(): void {
    this.leaveSiblings();
    this.#leaveStream();
    this.#listening = false;
  }

  #leaveStream(): void {
    if (this.#mailbox !== undefined) this.#stream?.drop(this.#mailbox.operationId);
    this.#mailbox = undefined;
    this.#stream?.leave();
    this.#stream = undefined;
  }
}

/** Settles when `signal` aborts, until `stop`. */
function abortWatch(signal: AbortSignal | undefined): {
  readonly happened: Promise<undefined>;
  readonly stop: () => void;
} {
  if (signal === undefined) return { happened: NEVER, stop: () => {} };
  let stop = () => {};
  const happened = new Promise<undefined>((resolve) => {
    if (signal.aborted) resolve(undefined);
    const onAbort = () => resolve(undefined);
    signal.addEventListener("abort", onAbort, { once: true });
    stop = () => signal.removeEventListener("abort", onAbort);
  });
  return { happened, stop };
}

/**
 * What one client's push-mode acquisitions share (one of each on its runtime): what the backend
 * was seen to serve, the siblings parked and the recent contention, and the client's streams to
 * the locks' hand-off channels (push over pub/sub, docs/push.md): one stream per channel, shared
 * by the client's acquisitions waiting on that lock, each reading the words addressed to its
 * operation id. The scripts' side is queue/hand-off.ts. A count-down latch's channel carries one
 * word, `opened`, for every reader (opening.ts).
 */
import { HAND_OFF_SHARDS } from "../../hold/script.js";
import { shownSafely } from "../../transport/failures.js";
import type { ChannelSubscription, RedisLike } from "../../transport/redis-like.js";
import { subscribeHearingEnd } from "../../transport/redis-like.js";

/**
 * Whether the backend's pops block; Upstash's REST API's do not (docs/push.md). Learnt once per
 * client from the first park that shows it; push mode then polls.
 */
export class BlockingPops {
  #served = true;

  get served(): boolean {
    return this.#served;
  }

  notServed(): void {
    this.#served = false;
  }
}

export interface SiblingWatch {
  readonly held: Promise<undefined>;
  readonly leave: () => void;
}

/**
 * Parked acquisitions per (lock, owner): when a hand-off reaches one, the lock is the others'
 * too (re-entry), and `held` makes them ask again rather than wait for a hand-off of their own.
 */
export class ParkedSiblings {
  readonly #parked = new Map<string, Set<() => void>>();

  /** Returns the function that removes `nudge`. */
  join(lockKey: string, owner: string, nudge: () => void): () => void {
    const id = `${lockKey}\n${owner}`;
    let nudges = this.#parked.get(id);
    if (nudges === undefined) {
      nudges = new Set();
      this.#parked.set(id, nudges);
    }
    const joined = nudges;
    joined.add(nudge);
    return () => {
      joined.delete(nudge);
      if (joined.size === 0 && this.#parked.get(id) === joined) this.#parked.delete(id);
    };
  }

  /**
   * Joins the acquisitions of `owner` parked on `lockKey`: `held` settles once one of the
   * others holds the lock (re-entry), until `leave`.
   */
  watch(lockKey: string, owner: string): SiblingWatch {
    let nudge = () => {};
    const held = new Promise<undefined>((resolve) => {
      nudge = () => resolve(undefined);
    });
    return { held, leave: this.join(lockKey, owner, nudge) };
  }

  held(lockKey: string, owner: string): void {
    for (const nudge of this.#parked.get(`${lockKey}\n${owner}`) ?? []) nudge();
  }
}

/*
 * Where the client recently waited: push mode parks beside the first attempt there, a round
 * trip off every contended hand-off. FREE_ASKS_TO_FORGET free first asks in a row forget the
 * key, so an uncontended lock costs one request again (two contenders see it free now and then).
 */

/** A key counts as contended this long after a wait on it. */
export const CONTENTION_MEMORY_MS = 10_000;
export const FREE_ASKS_TO_FORGET = 2;
/** The oldest goes first. */
const CONTENTION_MEMORY_KEYS = 256;

interface Seen {
  readonly at: number;
  /** Acquisitions since then that found the key free at their first ask. */
  freeAsks: number;
}

export class RecentContention {
  // Oldest first.
  readonly #seen = new Map<string, Seen>();

  saw(key: string, now: number = Date.now()): void {
    this.#seen.delete(key);
    this.#seen.set(key, { at: now, freeAsks: 0 });
    if (this.#seen.size > CONTENTION_MEMORY_KEYS) {
      const oldest = this.#seen.keys().next().value;
      if (oldest !== undefined) this.#seen.delete(oldest);
    }
  }

  likely(key: string, now: number = Date.now()): boolean {
    const seen = this.#seen.get(key);
    if (seen === undefined) return false;
    if (now - seen.at < CONTENTION_MEMORY_MS) return true;
    this.#seen.delete(key);
    return false;
  }

  freeAtFirstAsk(key: string): void {
    const seen = this.#seen.get(key);
    if (seen === undefined) return;
    seen.freeAsks += 1;
    if (seen.freeAsks >= FREE_ASKS_TO_FORGET) this.#seen.delete(key);
  }
}

// The client's streams to the locks' hand-off channels.

/** A Redis client that can subscribe (push over pub/sub). */
export type SubscribingRedis = RedisLike & Required<Pick<RedisLike, "subscribe">>;

/** What a hand-off told a waiter: it holds the lock (see handOffToParkedHead). */
export interface Grant {
  readonly kind: "granted";
  readonly fencingToken: number;
  readonly leaseMs: number;
  readonly sinceRegistrationMs: number;
  /** Over a subscription: the number of the registering attempt it counts from. */
  readonly registration?: number;
}

/** A word to one waiter from a release (see handOffToParkedHead). */
type AddressedWord = Grant | { readonly kind: "behind"; readonly leaseMs: number };

/** A word from a release, a latch's opening (to every reader), or the stream's end. */
export type HandOffWord =
  | AddressedWord
  /** A count-down latch reached 0 (see LATCH_COUNT_DOWN). */
  | { readonly kind: "opened" }
  /** The stream failed, ended or was closed: no word will come this way. */
  | { readonly kind: "lost" };

/** A stream kept this long after its last reader, for the next wait on the lock (not on Workers). */
export const STREAM_LINGER_MS = 1_000;
/**
 * Workers: streams (and blocking pops: a park holds a connection as long) one request keeps open
 * at once, through every client. An invocation has six connections; requests beyond them queue,
 * so streams must leave room for the attempts and releases that end waits. A request is the outermost owner scope (`client.scope()`, hono's
 * `withLock()`): scopes nested in it and every client used in it share its budget. Acquisitions
 * outside any scope cannot be told apart by request: they share one budget in the isolate.
 */
export const MAX_STREAMS_ON_WORKERS = 3;

/** Workers: streams and pops open now, by request (see currentRequest), over every client. */
const streamsOpenByRequest = new WeakMap<object, number>();
/** The request of acquisitions outside any scope. */
const UNSCOPED = {};
/** After this many streams in a row lost before they opened, the client stops subscribing. */
export const FAILED_OPENINGS_TO_GIVE_UP = 3;

/**
 * `<operation id> grant <fence> <lease ms> <ms since registration> <registering attempt>` or
 * `<operation id> behind <lease ms>`. Matched at the end: the client splits an SSE line at
 * commas, so a lock name with one would leave part of the channel in front of the message.
 */
const WORD = /(?:^|[\s,])(\S+) (?:grant (\d+) (\d+) (\d+) (\d+)|behind (\d+))$/;
/** A latch's channel: `opened`, for every reader. */
const OPENED = /(?:^|[\s,])opened$/;

/** Whether `message` is a count-down latch's `opened` (see LATCH_COUNT_DOWN). */
export function isOpenedWord(message: string): boolean {
  return OPENED.test(message);
}

export function parseHandOffWord(
  message: string,
): { readonly operationId: string; readonly word: AddressedWord } | undefined {
  const match = WORD.exec(message);
  if (match === null) return undefined;
  const [, operationId = "", fence, lease, since, registration, behind] = match;
  if (behind !== undefined) return { operationId, word: { kind: "behind", leaseMs: +behind } };
  return {
    operationId,
    word: {
      kind: "granted",
      fencingToken: Number(fence),
      leaseMs: Number(lease),
      sinceRegistrationMs: Number(since),
      registration: Number(registration),
    },
  };
}

/** The words for one acquisition, in order. */
export class Mailbox {
  readonly #words: HandOffWord[] = [];
  #waiting: ((word: HandOffWord) => void) | undefined;

  deliver(word: HandOffWord): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting !== undefined) waiting(word);
    else this.#words.push(word);
  }

  /** The next word, or undefined after `ms` or once `until` settles (whichever comes first). */
  next(ms: number, until?: Promise<unknown>): Promise<HandOffWord | undefined> {
    const word = this.#words.shift();
    if (word !== undefined) return Promise.resolve(word);
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stopTimer = () => {
        if (timer !== undefined) clearTimeout(timer);
      };
      const giveUp = () => {
        if (this.#waiting !== deliver) return;
        this.#waiting = undefined;
        stopTimer();
        resolve(undefined);
      };
      const deliver = (arrived: HandOffWord) => {
        stopTimer();
        resolve(arrived);
      };
      this.#waiting = deliver;
      if (Number.isFinite(ms)) timer = setTimeout(giveUp, Math.max(0, ms));
      until?.then(giveUp, giveUp);
    });
  }

  /** Puts back a word taken too early: the next `next` gets it. */
  putBack(word: HandOffWord): void {
    this.#words.unshift(word);
  }
}

/** One subscription to one lock's hand-off channel. */
export class HandOffStream {
  readonly #mailboxes = new Map<string, Mailbox>();
  readonly #subscription: ChannelSubscription;
  readonly #lingerMs: number;
  readonly #ended: (stream: HandOffStream, failedOpening: boolean) => void;
  #state: "opening" | "open" | "lost" = "opening";
  readonly #settled: Promise<void>;
  #settle: () => void = () => {};
  #linger: ReturnType<typeof setTimeout> | undefined;
  // Acquisitions using the stream; the last one out ends it (after the linger).
  #users = 0;

  constructor(
    redis: SubscribingRedis,
    channel: string,
    lingerMs: number,
    ended: (stream: HandOffStream, failedOpening: boolean) => void,
  ) {
    this.#lingerMs = lingerMs;
    this.#ended = ended;
    this.#settled = new Promise((resolve) => {
      this.#settle = resolve;
    });
    // A stream that ends in any way is lost: one the server ended says nothing otherwise.
    this.#subscription = subscribeHearingEnd(redis, channel, () => this.close(true));
    this.#subscription.on("subscribe", () => {
      if (this.#state === "opening") this.#state = "open";
      this.#settle();
    });
    this.#subscription.on("message", ({ message }) => this.#deliver(message));
    this.#subscription.on("error", () => this.close(true));
  }

  /** Confirmed by the server: a waiter registered from now on hears its hand-off. */
  get open(): boolean {
    return this.#state === "open";
  }

  get lost(): boolean {
    return this.#state === "lost";
  }

  /** Settles once the server confirmed the stream, or it was lost. */
  get settled(): Promise<void> {
    return this.#settled;
  }

  /** An acquisition uses the stream until it calls `leave`. */
  join(): void {
    this.#users += 1;
    if (this.#linger !== undefined) clearTimeout(this.#linger);
    this.#linger = undefined;
  }

  leave(): void {
    this.#users -= 1;
    if (this.#users > 0 || this.lost) return;
    if (this.#lingerMs <= 0) {
      this.close();
      return;
    }
    this.#linger = setTimeout(() => this.close(), this.#lingerMs);
    (this.#linger as { unref?: () => void }).unref?.();
  }

  /** The mailbox of acquisition `operationId` (one per id), until `drop`. */
  mailbox(operationId: string): Mailbox {
    let mailbox = this.#mailboxes.get(operationId);
    if (mailbox === undefined) {
      mailbox = new Mailbox();
      this.#mailboxes.set(operationId, mailbox);
      if (this.lost) mailbox.deliver({ kind: "lost" });
    }
    return mailbox;
  }

  /** The acquisition `operationId` reads no more. */
  drop(operationId: string): void {
    this.#mailboxes.delete(operationId);
  }

  /** Ends the stream (`failed`: it broke or the server ended it); every reader hears `lost`. */
  close(failed = false): void {
    if (this.lost) return;
    const failedOpening = failed && this.#state === "opening";
    this.#state = "lost";
    this.#settle();
    if (this.#linger !== undefined) clearTimeout(this.#linger);
    for (const mailbox of this.#mailboxes.values()) mailbox.deliver({ kind: "lost" });
    this.#subscription.unsubscribe().catch(() => {});
    this.#ended(this, failedOpening);
  }

  #deliver(message: unknown): void {
    // @upstash/redis parses JSON where it can; a word is never JSON, but be lenient.
    const text = typeof message === "string" ? message : shownSafely(message);
    if (isOpenedWord(text)) {
      for (const mailbox of this.#mailboxes.values()) mailbox.deliver({ kind: "opened" });
      return;
    }
    const parsed = parseHandOffWord(text);
    if (parsed !== undefined) this.#mailboxes.get(parsed.operationId)?.deliver(parsed.word);
  }
}

/** Workers: a stream is bound to the invocation that opened it (its I/O ends with it). */
function streamsOutliveInvocations(): boolean {
  const agent = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent;
  return agent !== "Cloudflare-Workers";
}

/**
 * A client's hand-off streams by channel. On Workers a stream serves one acquisition and ends
 * with it: an invocation's I/O cannot be used by another, so a shared stream would go silent
 * when its opener's invocation ends.
 */
export class HandOffSubscriptions {
  readonly #streams = new Map<string, HandOffStream>();
  readonly #shared = streamsOutliveInvocations();
  #failedOpenings = 0;
  // Node: the client's waiters share one stream per lock, so they listen on one shard.
  readonly #shard = Math.floor(Math.random() * HAND_OFF_SHARDS);

  /**
   * The shard of a lock's hand-off channels a waiter listens on: the client's in Node (its
   * waiters on a lock share a stream), a fresh draw per acquisition on Workers (each has its own
   * stream), so that a word reaches a fraction of the streams.
   */
  shard(): number {
    return this.#shared ? this.#shard : Math.floor(Math.random() * HAND_OFF_SHARDS);
  }

  /**
   * On Workers, one of the request's MAX_STREAMS_ON_WORKERS connections for a waiter that parks
   * on blocking pops (Parking), until the returned function is called; undefined when the
   * request has none left (the waiter polls). In Node, always (pops there share no budget).
   */
  holdConnection(request?: object): (() => void) | undefined {
    if (this.#shared) return () => {};
    const budget = request ?? UNSCOPED;
    const open = streamsOpenByRequest.get(budget) ?? 0;
    if (open >= MAX_STREAMS_ON_WORKERS) return undefined;
    streamsOpenByRequest.set(budget, open + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      streamsOpenByRequest.set(budget, Math.max(0, (streamsOpenByRequest.get(budget) ?? 1) - 1));
    };
  }

  /** False once streams kept failing before they opened: push mode then polls. */
  get usable(): boolean {
    return this.#failedOpenings < FAILED_OPENINGS_TO_GIVE_UP;
  }

  /**
   * The open or opening stream of `channel`, or a new one; undefined: none now (poll). On
   * Workers `request` is the request the acquisition runs for (currentRequest; undefined: none),
   * whose budget (MAX_STREAMS_ON_WORKERS) the stream counts against until it ends.
   */
  stream(redis: SubscribingRedis, channel: string, request?: object): HandOffStream | undefined {
    const known = this.#shared ? this.#streams.get(channel) : undefined;
    if (known !== undefined && !known.lost) return known;
    const budget = request ?? UNSCOPED;
    const counted = !this.#shared;
    if (counted) {
      const open = streamsOpenByRequest.get(budget) ?? 0;
      if (open >= MAX_STREAMS_ON_WORKERS) return undefined;
      streamsOpenByRequest.set(budget, open + 1);
    }
    const stream = new HandOffStream(
      redis,
      channel,
      this.#shared ? STREAM_LINGER_MS : 0,
      (ended, failedOpening) => {
        if (counted) {
          streamsOpenByRequest.set(
            budget,
            Math.max(0, (streamsOpenByRequest.get(budget) ?? 1) - 1),
          );
        }
        if (this.#streams.get(channel) === ended) this.#streams.delete(channel);
        this.#failedOpenings = failedOpening ? this.#failedOpenings + 1 : 0;
      },
    );
    if (this.#shared) this.#streams.set(channel, stream);
    return stream;
  }
}

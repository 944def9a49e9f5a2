/**
 * Faults on the words of push hand-off over a subscription (`wait.wakeBy: "subscription"`, the
 * `*-sub` kinds: the locks' and the semaphore's hand-off channels, the latch's), done on the
 * isolates' side of the stream: the server subscribes, decides and publishes for real; what the
 * library hears through `redis.subscribe()` is tampered with, at seeded rates (each isolate its
 * own draws from the run's seed):
 * - a word (`<operation id> grant …` or `<operation id> behind …`, or a count-down latch's
 *   `opened`, the `latch-sub` kind) lost;
 * - a word late, by up to `lateMaxMs` (some past the grant's claim window); a stream keeps its
 *   order, so the words after a late one wait for it (a stalled connection);
 * - a stream whose confirmation never reaches the client (it never listens on it);
 * - a confirmed stream that goes silent mid-way (a connection that stalls: nothing more comes and
 *   nothing ends, so the library cannot tell; the connection stays open until the library lets
 *   go of the stream or the run ends), or that ends: its connection really closes, so the server
 *   forgets it, with an `error` event (as when its request fails) — a body that ends is heard by
 *   the library (transport/redis-like.ts), as the closing of the connection here is;
 * - a subscriber killed: the words for an acquisition of a killed owner are never read (its
 *   process is gone; see createIsolate's killWhenParked, which for these kinds kills an owner as
 *   its first attempt sent listening is answered).
 * Each fault is counted, with what came of the hand-offs (held after a word heard, or after the
 * word was lost: the next attempt replayed the grant).
 */
import type { Redis } from "@upstash/redis";
import { createPrng } from "../../dev/rest/faults.js";
import { ACQUIRE_ARGS } from "../../src/locks/exclusive/lock.js";
import { SEMAPHORE_ACQUIRE } from "../../src/locks/semaphore/acquire.js";
import type { ChannelSubscription, SubscriptionEvents } from "../../src/transport/redis-like.js";
import { isOpenedWord, parseHandOffWord } from "../../src/wait/push/client-state.js";

export interface SubscriptionFaultOptions {
  /** Fraction of words never passed on. */
  readonly lostRate: number;
  /** Fraction of words passed on late, by 1 to `lateMaxMs` ms (uniform). */
  readonly lateRate: number;
  readonly lateMaxMs: number;
  /** Fraction of streams whose confirmation never reaches the client. */
  readonly neverConfirmRate: number;
  /** Fraction of confirmed streams that end silently, within `endWithinMs` of confirmation. */
  readonly silentEndRate: number;
  /** Fraction of confirmed streams that end with an `error` event, likewise. */
  readonly errorEndRate: number;
  readonly endWithinMs: number;
  /**
   * Fraction of streams the server side ends (the proxy ends the body cleanly, as one closing a
   * long-lived SSE stream would), within `endWithinMs` of the answer: no tampering on the
   * client's side, so the library meets a stream as @upstash/redis reads it when it ends.
   */
  readonly serverEndRate: number;
  /**
   * Fraction of sections whose waiter is killed once it listens (its first attempt sent listening
   * is answered); instead of the run's `killParkedRate`, as many waits never listen (their stream
   * is not confirmed yet when they ask).
   */
  readonly killRate: number;
}

/** What the streams of a run met, and what came of the hand-offs. */
export interface SubscriptionCounts {
  /** Subscriptions the isolates' lock clients opened. */
  streams: number;
  /** Confirmations passed on to the client. */
  confirmed: number;
  /** Faults: confirmations withheld; streams ended mid-way, silently or with an error event. */
  neverConfirmed: number;
  endedSilently: number;
  endedWithError: number;
  /** Streams the server side ended (cleanly, at the proxy). */
  endedByServer: number;
  /** Attempts sent listening (they may register their waiter to be told by word). */
  listening: number;
  /** Of those, sent while the isolate's latest stream on that lock had ended silently. */
  listeningOnSilentStream: number;
  /** Hand-off words the server pushed on the isolates' open streams, and of them grants. */
  words: number;
  grants: number;
  /** Faults on them: lost; late (and of those, later than the grant's claim window). */
  lost: number;
  late: number;
  lateBeyondClaim: number;
  /** Words for an acquisition whose owner was killed (never read). */
  toKilled: number;
  /** Late words still on their way when their stream ended mid-way (hand-off and latch words). */
  cutOff: number;
  /**
   * A count-down latch's `opened` words (the `latch-sub` kind) the server pushed on the isolates'
   * open streams (every stream on the latch's channel hears it), and the faults on them.
   */
  latchWords: number;
  latchWordsLost: number;
  latchWordsLate: number;
  /** Grants held (by the acquisition told, or a sibling task) whose word the waiter heard. */
  heldByWord: number;
  /**
   * Holds whose token is that of a grant whose word was lost or came past its claim window (the
   * next attempt replayed it).
   */
  heldAfterLostWord: number;
}

/** Where an acquire script's ARGV has what a waiter sent listening registers. */
interface ListeningArgs {
  readonly owner: number;
  readonly claimMs: number;
  readonly parkId: number;
  readonly wakeBy: number;
}

function listeningArgsOf(names: readonly string[]): ListeningArgs {
  const at = (name: string) => {
    const index = names.indexOf(name);
    if (index < 0) throw new Error(`chaos: an acquire script without ${name}`);
    return index;
  };
  return {
    owner: at("owner"),
    claimMs: at("claimMs"),
    parkId: at("parkId"),
    wakeBy: at("wakeBy"),
  };
}

/** The plain, fair and write locks' acquire scripts: their ARGV start with ACQUIRE_ARGS. */
const LOCK_ACQUIRE = listeningArgsOf(ACQUIRE_ARGS);
/** The semaphore's acquire script (semaphore.acquire): its own ARGV. */
const SEMAPHORE_ACQUIRE_ARGS = listeningArgsOf(SEMAPHORE_ACQUIRE.argNames);
/** Where the semaphore's acquire script has its capacity key, by which it is told apart. */
const SEMAPHORE_CAPACITY = SEMAPHORE_ACQUIRE.keyNames.indexOf("capacityKey");

/**
 * The owner and operation id of an acquire attempt (plain, fair, write lock: their ARGV start with
 * ACQUIRE_ARGS; a semaphore's, told apart by its KEYS) sent listening: it registers its waiter, if
 * busy, to be told by word.
 */
export function listeningAttempt(
  args: readonly unknown[],
  keys: readonly string[] = [],
): { readonly owner: string; readonly operationId: string; readonly shard: number } | undefined {
  const semaphore =
    keys.length === SEMAPHORE_ACQUIRE.keyNames.length &&
    keys[SEMAPHORE_CAPACITY]?.endsWith(":semaphore:capacity") === true;
  const at = semaphore ? SEMAPHORE_ACQUIRE_ARGS : LOCK_ACQUIRE;
  const wakeBy = args[at.wakeBy];
  if (typeof wakeBy !== "string" || !wakeBy.startsWith("sub") || !(Number(args[at.claimMs]) > 0)) {
    return undefined;
  }
  const owner = args[at.owner];
  const operationId = args[at.parkId];
  if (typeof owner !== "string" || typeof operationId !== "string") return undefined;
  // `sub<attempt>.<shard>`: the shard of the lock's hand-off channels it listens on.
  const shard = Number(wakeBy.split(".")[1] ?? 0);
  return { owner, operationId, shard };
}

/** A hand-off word as the library reads it (parseHandOffWord), in the harness's terms. */
function parseWord(
  message: unknown,
): { operationId: string; fence: number | undefined; leaseMs: number } | undefined {
  if (typeof message !== "string") return undefined;
  const parsed = parseHandOffWord(message);
  if (parsed === undefined) return undefined;
  const { operationId, word } = parsed;
  return {
    operationId,
    fence: word.kind === "granted" ? word.fencingToken : undefined,
    leaseMs: word.leaseMs,
  };
}

/**
 * A count-down latch's word: `opened` on its channel (`<prefix>:{<name>}:latch:opened`, see
 * latchKeys and LATCH_COUNT_DOWN), as the library reads it (isOpenedWord).
 */
function isLatchWord(channel: string, message: unknown): boolean {
  return channel.endsWith(":latch:opened") && typeof message === "string" && isOpenedWord(message);
}

type StreamEnd = "client" | "silent" | "error";

/**
 * A fault the docs let cost a waiter one park (push.md, "A word that never comes costs a bounded
 * wait"): a word lost or heard past its claim window, an attempt sent listening on a stream that
 * had ended silently, a stream that ended with an error or was never confirmed. The liveness check
 * lets a free key with a waiter on `key` stay idle one park past `at` for it (and no longer).
 */
export interface ParkCostingFault {
  /** The lock's (or semaphore's) name: the workload key. */
  readonly key: string;
  readonly at: number;
  readonly what: string;
  /** Whose wait it concerns: the owner told (a word), or the isolate's every waiter (a stream). */
  readonly owner?: string;
  readonly isolate?: number;
}

/** The name inside a channel's or key's hash tag: `<prefix>:{<name>}…` (workload key). */
export function nameOf(channelOrKey: string): string {
  return /\{([^}]*)\}/.exec(channelOrKey)?.[1] ?? channelOrKey;
}

/** The run's subscription faults: shared counts, and each isolate's tampering. */
export class SubscriptionFaults {
  readonly counts: SubscriptionCounts = {
    streams: 0,
    confirmed: 0,
    neverConfirmed: 0,
    endedSilently: 0,
    endedWithError: 0,
    endedByServer: 0,
    listening: 0,
    listeningOnSilentStream: 0,
    words: 0,
    grants: 0,
    lost: 0,
    late: 0,
    lateBeyondClaim: 0,
    toKilled: 0,
    cutOff: 0,
    latchWords: 0,
    latchWordsLost: 0,
    latchWordsLate: 0,
    heldByWord: 0,
    heldAfterLostWord: 0,
  };
  /** Every fault that may cost a waiter one park, when and on which key. */
  readonly parkCosts: ParkCostingFault[] = [];
  readonly #options: SubscriptionFaultOptions;
  readonly #seed: number;
  /** Operation id of an attempt sent listening → its owner, and the isolate it was sent from. */
  readonly #owners = new Map<
    string,
    { readonly owner: string; readonly isolate: IsolateSubscriptions }
  >();
  /** Grants whose word was heard in time / lost or heard too late, by owner: fencing tokens. */
  readonly #heard = new Map<string, Set<number>>();
  readonly #lost = new Map<string, Set<number>>();
  /** Every stream still open, to end them all when the run is over. */
  readonly #open = new Set<() => void>();

  constructor(options: SubscriptionFaultOptions, seed: number) {
    this.#options = options;
    this.#seed = seed;
  }

  /** The tampering of one isolate: `crashed` are its owners whose process is gone. */
  forIsolate(id: number, crashed: ReadonlySet<string>): IsolateSubscriptions {
    return new IsolateSubscriptions(
      id,
      this,
      this.#open,
      this.#options,
      createPrng((this.#seed ^ 0x5ab5c21b) + id * 7_919),
      crashed,
    );
  }

  /**
   * Ends the streams still open (the run is over: the isolates' processes end), before the
   * servers close under them (which @upstash/redis would report on the console).
   */
  closeAll(): void {
    for (const close of [...this.#open]) close();
  }

  /** An attempt left an isolate: one sent listening names its owner. */
  attemptSent(
    args: readonly unknown[],
    keys: readonly string[],
    streams: IsolateSubscriptions,
  ): { readonly owner: string; readonly operationId: string } | undefined {
    const listening = listeningAttempt(args, keys);
    if (listening === undefined) return undefined;
    this.counts.listening += 1;
    this.#owners.set(listening.operationId, { owner: listening.owner, isolate: streams });
    const parked = keys.find((key) => key.endsWith(":parked"));
    const channel = `${parked?.slice(0, -7)}:hand-offs:${listening.shard}`;
    if (parked !== undefined && streams.endedSilently(channel)) {
      this.counts.listeningOnSilentStream += 1;
      this.costsAPark(channel, "an attempt sent listening on a stream that had ended silently", {
        owner: listening.owner,
      });
    }
    return listening;
  }

  /** The owner of `operationId` if it is an acquisition of `isolate`'s. */
  ownerIn(isolate: IsolateSubscriptions, operationId: string): string | undefined {
    const known = this.#owners.get(operationId);
    return known?.isolate === isolate ? known.owner : undefined;
  }

  /** The proxy ended a stream (its request path `/subscribe/<channel>`) on the server's behalf. */
  endedByServer(path: string): void {
    this.counts.endedByServer += 1;
    this.costsAPark(decodeURIComponent(path), "a stream ended by the server", {});
  }

  /** Records a fault on `channel` (or a key of its lock) that may cost its waiters one park. */
  costsAPark(channel: string, what: string, whose: { owner?: string; isolate?: number }): void {
    this.parkCosts.push({ key: nameOf(channel), at: Date.now(), what, ...whose });
  }

  grantHeard(owner: string, fence: number): void {
    addTo(this.#heard, owner, fence);
  }

  grantLost(owner: string, fence: number): void {
    addTo(this.#lost, owner, fence);
  }

  /**
   * `owner`'s acquisition returned a hold with `fencingToken`: a grant's, counted once (sibling
   * tasks of the owner that join that hold return it too).
   */
  acquired(owner: string, fencingToken: number | undefined): void {
    if (fencingToken === undefined) return;
    if (this.#heard.get(owner)?.delete(fencingToken)) this.counts.heldByWord += 1;
    else if (this.#lost.get(owner)?.delete(fencingToken)) this.counts.heldAfterLostWord += 1;
  }
}

function addTo(map: Map<string, Set<number>>, owner: string, fence: number): void {
  let set = map.get(owner);
  if (set === undefined) {
    set = new Set();
    map.set(owner, set);
  }
  set.add(fence);
}

type Listeners = { [T in keyof SubscriptionEvents]: ((event: SubscriptionEvents[T]) => void)[] };

/** One isolate's streams, each tampered with as drawn when it opened. */
export class IsolateSubscriptions {
  readonly #id: number;
  readonly #faults: SubscriptionFaults;
  readonly #open: Set<() => void>;
  readonly #options: SubscriptionFaultOptions;
  readonly #random: () => number;
  readonly #crashed: ReadonlySet<string>;
  /** The latest stream of each channel: how it ended, if it did. */
  readonly #latest = new Map<string, { ended: StreamEnd | undefined }>();

  constructor(
    id: number,
    faults: SubscriptionFaults,
    open: Set<() => void>,
    options: SubscriptionFaultOptions,
    random: () => number,
    crashed: ReadonlySet<string>,
  ) {
    this.#id = id;
    this.#faults = faults;
    this.#open = open;
    this.#options = options;
    this.#random = random;
    this.#crashed = crashed;
  }

  /** Whether the latest stream this isolate opened on `channel` ended silently. */
  endedSilently(channel: string): boolean {
    return this.#latest.get(channel)?.ended === "silent";
  }

  /** `redis.subscribe(channel)` as the library sees it, with this stream's faults. */
  subscribe(redis: Redis, channel: string): ChannelSubscription {
    const options = this.#options;
    const random = this.#random;
    const counts = this.#faults.counts;
    counts.streams += 1;
    // Drawn whatever the rates, so that a seed replays the same faults.
    const neverConfirm = random() < options.neverConfirmRate;
    const endDraw = random();
    const endAfterMs = random() * options.endWithinMs;
    const ending: StreamEnd | undefined =
      endDraw < options.silentEndRate
        ? "silent"
        : endDraw < options.silentEndRate + options.errorEndRate
          ? "error"
          : undefined;
    const state: { ended: StreamEnd | undefined } = { ended: undefined };
    this.#latest.set(channel, state);
    const listeners: Listeners = { subscribe: [], message: [], error: [] };
    const inner = redis.subscribe<unknown>(channel);
    const closeInner = () => {
      this.#open.delete(closeInner);
      void inner.unsubscribe().catch(() => {});
    };
    this.#open.add(closeInner);
    let endTimer: ReturnType<typeof setTimeout> | undefined;
    // Words keep their order: one due later holds back those after it.
    let lastDueAt = 0;
    const passOn = (delayMs: number, deliver: () => void) => {
      const dueAt = Math.max(Date.now() + delayMs, lastDueAt);
      lastDueAt = dueAt;
      const waitMs = dueAt - Date.now();
      if (waitMs <= 0) deliver();
      else setTimeout(deliver, waitMs);
    };
    const end = (how: StreamEnd) => {
      if (state.ended !== undefined) return;
      state.ended = how;
      if (endTimer !== undefined) clearTimeout(endTimer);
      // A silent stream stalls: closing its connection would be heard as its end.
      if (how !== "silent") closeInner();
      if (how === "silent") counts.endedSilently += 1;
      if (how !== "client")
        this.#faults.costsAPark(channel, `a stream ended (${how})`, { isolate: this.#id });
      if (how === "error") {
        counts.endedWithError += 1;
        for (const listener of listeners.error) listener(new Error("chaos: the stream broke"));
      }
    };

    inner.on("subscribe", (count) => {
      if (state.ended !== undefined) return;
      if (neverConfirm) {
        counts.neverConfirmed += 1;
        this.#faults.costsAPark(channel, "a stream never confirmed", { isolate: this.#id });
        return;
      }
      passOn(0, () => {
        if (state.ended !== undefined) return;
        counts.confirmed += 1;
        for (const listener of listeners.subscribe) listener(count);
        if (ending !== undefined) endTimer = setTimeout(() => end(ending), endAfterMs);
      });
    });
    inner.on("message", (event) => {
      if (state.ended !== undefined) return;
      if (isLatchWord(channel, event.message)) {
        // For every reader of the stream: lost or late as a whole, like a hand-off word.
        counts.latchWords += 1;
        const lostDraw = random();
        const lateDraw = random();
        const delayDraw = random();
        if (lostDraw < options.lostRate) {
          counts.latchWordsLost += 1;
          return;
        }
        let delayMs = 0;
        if (lateDraw < options.lateRate) {
          delayMs = 1 + delayDraw * (options.lateMaxMs - 1);
          counts.latchWordsLate += 1;
        }
        passOn(delayMs, () => {
          if (state.ended !== undefined) {
            if (state.ended !== "client") counts.cutOff += 1;
            return;
          }
          for (const listener of listeners.message) listener(event);
        });
        return;
      }
      const word = parseWord(event.message);
      const owner = word && this.#faults.ownerIn(this, word.operationId);
      if (word === undefined || owner === undefined) {
        // Every subscriber hears every word on the channel: one for another isolate's waiter
        // (or none) goes on untouched, and unread.
        passOn(0, () => {
          if (state.ended === undefined) for (const listener of listeners.message) listener(event);
        });
        return;
      }
      counts.words += 1;
      if (word.fence !== undefined) counts.grants += 1;
      if (this.#crashed.has(owner)) {
        counts.toKilled += 1;
        return;
      }
      const lostDraw = random();
      const lateDraw = random();
      const delayDraw = random();
      if (lostDraw < options.lostRate) {
        counts.lost += 1;
        this.#faults.costsAPark(channel, "a word lost", { owner });
        if (word.fence !== undefined) this.#faults.grantLost(owner, word.fence);
        return;
      }
      let delayMs = 0;
      if (lateDraw < options.lateRate) {
        delayMs = 1 + delayDraw * (options.lateMaxMs - 1);
        counts.late += 1;
      }
      // Heard after its claim window: the waiter cannot trust it (its next attempt replays it).
      const tooLate = word.fence !== undefined && delayMs >= word.leaseMs;
      if (tooLate) counts.lateBeyondClaim += 1;
      // A grant heard within its claim window is held (the key is not free meanwhile).
      if (tooLate)
        this.#faults.costsAPark(channel, "a grant heard past its claim window", { owner });
      passOn(delayMs, () => {
        if (state.ended !== undefined) {
          if (state.ended !== "client") counts.cutOff += 1;
          return;
        }
        if (word.fence !== undefined) {
          if (tooLate) this.#faults.grantLost(owner, word.fence);
          else this.#faults.grantHeard(owner, word.fence);
        }
        for (const listener of listeners.message) listener(event);
      });
    });
    inner.on("error", (error) => {
      if (state.ended !== undefined) return;
      for (const listener of listeners.error) listener(error);
    });
    return {
      on<T extends keyof SubscriptionEvents>(
        type: T,
        listener: (event: SubscriptionEvents[T]) => void,
      ) {
        (listeners[type] as ((event: SubscriptionEvents[T]) => void)[]).push(listener);
      },
      async unsubscribe() {
        if (state.ended === undefined) {
          state.ended = "client";
          if (endTimer !== undefined) clearTimeout(endTimer);
        }
        closeInner();
      },
    };
  }
}

/**
 * The count-down latch (Redisson RCountDownLatch): a count in Redis that `countDown()` lowers
 * and `await()` waits to reach 0, across every isolate. It is a plain counter with a TTL: an
 * abandoned latch vanishes after `ttlMs`, and a vanished latch reads as open (count 0), as in
 * Redisson, where a latch that was never set is open too. Waiting is polling with the shared
 * wait policy's backoff, bounded by the latch's expiry; in push mode it listens on the latch's
 * channel instead, where the countDown that opens it publishes (wait/push/opening.ts).
 */
import { newOperationId } from "../../platform.js";
import {
  checkCount,
  checkDuration,
  checkLockName,
  checkOptions,
  checkSignal,
} from "../../validate.js";
import { resolveWaitPolicy, type WaitOptions } from "../../wait/policy.js";
import { type PollOutcome, pollForLock } from "../../wait/poll.js";
import { OpeningWatch } from "../../wait/push/opening.js";
import type { LockRuntime } from "../../wait/runtime.js";
import { readLatch } from "./count.js";
import { type LatchKeys, latchKeys } from "./keys.js";
import { countLatchDown, trySetLatchCount } from "./update.js";

/** Options of `client.countDownLatch(name, options)`. */
export interface CountDownLatchOptions {
  /**
   * How long a latch lives after `trySetCount`, in ms: an abandoned latch (its counters crashed)
   * vanishes then, and reads as open. Choose it longer than the work it gates.
   * @default 86400000 (one day)
   */
  ttlMs?: number;
}

/** Options of `latch.await()`. */
export interface LatchAwaitOptions {
  /**
   * How long to wait for the count to reach 0, in ms.
   * @default Infinity (until open, aborted or out of poll budget)
   */
  waitMs?: number;
  /** Stops waiting when aborted (LockAbortedError). @default none */
  signal?: AbortSignal;
  /**
   * Overrides the client's wait policy; each read of the count is a request. Polling, long
   * waits want a larger `maxDelayMs` and `maxPolls`. With `mode: "push"` (and `wakeBy` not
   * `"pop"`) the await subscribes to the latch's channel and is told when the count reaches 0,
   * reading the count again after parks without a word that start at `parkMs` and double; those
   * reads are not polls of `maxPolls` (docs/semaphore.md).
   * @default the client's
   */
  wait?: WaitOptions;
}

const LATCH_KEYS = ["ttlMs"] as const;
const AWAIT_KEYS = ["waitMs", "signal", "wait"] as const;
const DEFAULT_LATCH_TTL_MS = 86_400_000;

/**
 * A count-down latch (Redisson RCountDownLatch), from `client.countDownLatch(name)`: set a count,
 * count it down from anywhere, and `await()` it reaching zero. The latch lives `ttlMs` in Redis.
 */
export class CountDownLatch {
  /** The latch's name. */
  readonly name: string;
  /** How long a latch lives after `trySetCount`, in ms. */
  readonly ttlMs: number;
  readonly #runtime: LockRuntime;
  readonly #keys: LatchKeys;

  /** @internal Use `client.countDownLatch(name, options)`. */
  constructor(runtime: LockRuntime, name: unknown, options?: CountDownLatchOptions) {
    this.name = checkLockName(name);
    const given = checkOptions<CountDownLatchOptions>(options, "latch options", LATCH_KEYS);
    this.ttlMs =
      given.ttlMs === undefined
        ? DEFAULT_LATCH_TTL_MS
        : checkDuration(given.ttlMs, "ttlMs", { min: 1_000 });
    this.#runtime = runtime;
    this.#keys = latchKeys(runtime.prefix, this.name);
  }

  /** Sets the count to `count` (at least 1) if the latch is open or unset; true when it did. */
  async trySetCount(count: number): Promise<boolean> {
    const n = checkCount(count, "count", 1, 1_000_000_000);
    return trySetLatchCount(this.#runtime.ctx, this.#keys, n, this.ttlMs, newOperationId());
  }

  /** Lowers the count by one (exactly once, also when re-sent); returns what is left. */
  countDown(): Promise<number> {
    return countLatchDown(this.#runtime.ctx, this.#keys, newOperationId());
  }

  /** The count now: 0 when open, unset or expired. */
  async count(): Promise<number> {
    return (await readLatch(this.#runtime.ctx, this.#keys)).count;
  }

  /**
   * Waits until the count reaches 0: true when it did, false when `waitMs` passed first. Throws
   * LockAbortedError on abort and LockBudgetExceededError when the poll budget is spent.
   * @example
   * if (!(await client.countDownLatch("import:42").await({ waitMs: 30_000 }))) return retryLater();
   */
  async await(options?: LatchAwaitOptions): Promise<boolean> {
    const given = checkOptions<LatchAwaitOptions>(options, "await options", AWAIT_KEYS);
    const waitMs =
      given.waitMs === undefined
        ? Number.POSITIVE_INFINITY
        : checkDuration(given.waitMs, "waitMs", { min: 0, allowInfinity: true });
    const signal = checkSignal(given.signal);
    const policy =
      given.wait === undefined
        ? this.#runtime.waitPolicy
        : resolveWaitPolicy(given.wait, this.#runtime.waitPolicy);
    const deadline = Date.now() + waitMs;
    const watch = OpeningWatch.for(this.#runtime, this.#keys.opened, policy);
    try {
      const result = await pollForLock({
        lockName: this.name,
        waitMs,
        signal,
        policy,
        attempt: async () => {
          const covered = watch?.covers === true;
          const { count, ttlMs } = await readLatch(this.#runtime.ctx, this.#keys);
          if (count === 0) return { done: true, value: true };
          if (watch === undefined || !covered) {
            watch?.listen();
            // The latch opens at its expiry at the latest: never sleep past it.
            return { done: false, holderTtlMs: ttlMs };
          }
          return this.#listen(watch, ttlMs, policy.parkMs, deadline, signal);
        },
      });
      return result.acquired;
    } finally {
      watch?.close();
    }
  }

  /**
   * Waits on a confirmed stream until `opened` is heard or a read finds the count 0. A park
   * that ends without a word reads the count again (a word can be lost on a stream that stays
   * open), and the next park lasts twice as long: a wait of `T` costs about log2(T / parkMs)
   * reads, none of them a poll of the budget, and a lost word costs at most the time waited
   * before it plus `parkMs`. No park outlasts the latch's expiry, which opens it without a word.
   * Once the stream is lost, the deadline passed or the signal aborted, the poll loop takes
   * over (one poll).
   */
  async #listen(
    watch: OpeningWatch,
    ttlMs: number | null,
    firstParkMs: number,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<PollOutcome<boolean>> {
    let expiresInMs = ttlMs;
    for (let parkMs = firstParkMs; ; parkMs *= 2) {
      const park = Math.min(parkMs, expiresInMs ?? Number.POSITIVE_INFINITY, deadline - Date.now());
      if (await watch.opened(Math.max(1, park), signal)) return { done: true, value: true };
      if (!watch.covers || signal?.aborted || Date.now() >= deadline) {
        return { done: false, holderTtlMs: expiresInMs, nextPollMs: 0 };
      }
      const read = await readLatch(this.#runtime.ctx, this.#keys);
      if (read.count === 0) return { done: true, value: true };
      expiresInMs = read.ttlMs;
    }
  }
}

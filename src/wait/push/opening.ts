/**
 * A count-down latch's `await()` in push mode: instead of polling the count it listens on the
 * latch's channel, where the countDown that reaches 0 publishes `opened`. Only a read sent once
 * the server confirmed the stream counts: a latch that opens after that read is heard of. A word
 * that never comes (lost, or a stream whose end went unheard) costs one park, never past the
 * latch's expiry (which opens it without a word); then the count is read again (latch.ts: the
 * parks double, so a long wait costs few reads).
 */
import { currentRequest, newOperationId } from "../../platform.js";
import { canSubscribe } from "../../transport/redis-like.js";
import type { WaitPolicy } from "../policy.js";
import type { LockRuntime } from "../runtime.js";
import type { HandOffStream, Mailbox } from "./client-state.js";

/** Streams one await may open (the second after the first was lost); then it polls. */
const STREAMS_PER_AWAIT = 2;

export class OpeningWatch {
  readonly #runtime: LockRuntime;
  readonly #channel: string;
  readonly #operationId = newOperationId();
  #stream: HandOffStream | undefined;
  #mailbox: Mailbox | undefined;
  #streamsOpened = 0;
  // The request whose stream budget (Workers) this await's stream counts against.
  readonly #request = currentRequest();

  /** Undefined where the await polls: poll mode, `wakeBy: "pop"`, or no usable `subscribe`. */
  static for(runtime: LockRuntime, channel: string, policy: WaitPolicy): OpeningWatch | undefined {
    if (policy.mode === "poll" || policy.wakeBy === "pop") return undefined;
    if (!canSubscribe(runtime.ctx.redis) || !runtime.subscriptions.usable) return undefined;
    return new OpeningWatch(runtime, channel);
  }

  private constructor(runtime: LockRuntime, channel: string) {
    this.#runtime = runtime;
    this.#channel = channel;
  }

  /** Whether a read sent now would be followed by the word: the stream is confirmed. */
  get covers(): boolean {
    return this.#stream?.open === true;
  }

  /** Opens the stream (a read found the latch closed), unless it is open or may not be. */
  listen(): void {
    if (this.#stream !== undefined && !this.#stream.lost) return;
    const { redis } = this.#runtime.ctx;
    if (this.#streamsOpened >= STREAMS_PER_AWAIT || !canSubscribe(redis)) return;
    if (!this.#runtime.subscriptions.usable) return;
    this.close();
    const stream = this.#runtime.subscriptions.stream(redis, this.#channel, this.#request);
    if (stream === undefined) return;
    stream.join();
    this.#streamsOpened += 1;
    this.#stream = stream;
    this.#mailbox = stream.mailbox(this.#operationId);
  }

  /**
   * True when `opened` came within `ms`; false when the time passed, the stream ended, or
   * `signal` aborted first.
   */
  async opened(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
    const mailbox = this.#mailbox;
    if (mailbox === undefined || signal?.aborted) return false;
    const until = Date.now() + ms;
    let onAbort = () => {};
    const aborted = new Promise<void>((resolve) => {
      onAbort = () => resolve();
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      for (;;) {
        const word = await mailbox.next(until - Date.now(), aborted);
        if (word === undefined || word.kind === "lost") return false;
        // Only `opened` is published on a latch's channel; anything else is not for this wait.
        if (word.kind === "opened") return true;
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      onAbort();
    }
  }

  /** The await is over: it reads no more words (the stream may linger for the next). */
  close(): void {
    this.#stream?.drop(this.#operationId);
    this.#stream?.leave();
    this.#stream = undefined;
    this.#mailbox = undefined;
  }
}

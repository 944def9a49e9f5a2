/**
 * A Redis client over the real @upstash/redis whose streams and answers a test can tamper with:
 * words dropped or delayed, a confirmation that never comes, failing streams, a process that
 * died, answers lost on the way back; and every script sent, to replay later. The server's
 * decisions stay real.
 */
import type { Redis } from "@upstash/redis";
import type { RedisLike } from "../../src/index.js";
import type { ChannelSubscription, SubscriptionEvents } from "../../src/transport/redis-like.js";

export interface Tap {
  subscribes: number;
  words: number;
  /** Words the client never sees. */
  dropWords: boolean;
  /** Words reach the client this much later. */
  delayMs: number;
  /** The server's confirmation never reaches the client. */
  neverConfirm: boolean;
  /** Every subscription fails at once. */
  failing: boolean;
  /** Every script from now on hangs (the process died). */
  dead: boolean;
  /** The next this many scripts run, but their answers are lost on the way back. */
  loseAnswers: number;
  /** Every script sent, to send a copy later (as a re-send or a slow network would). */
  sent: { script?: string; sha?: string; keys: string[]; args: string[] }[];
}

/** A Redis client (with `exec` too, as @upstash/redis has) whose streams can be tampered with. */
export function tapped(redis: Redis): { redis: RedisLike; tap: Tap } {
  const tap: Tap = {
    subscribes: 0,
    words: 0,
    dropWords: false,
    delayMs: 0,
    neverConfirm: false,
    failing: false,
    dead: false,
    loseAnswers: 0,
    sent: [],
  };
  const hang = () => new Promise<never>(() => {});
  const answered = async <T>(reply: Promise<T>): Promise<T> => {
    const value = await reply;
    if (tap.loseAnswers === 0) return value;
    tap.loseAnswers -= 1;
    throw new TypeError("fetch failed");
  };
  const client: RedisLike = {
    eval: (script, keys, args) => {
      tap.sent.push({ script, keys, args });
      return tap.dead ? hang() : answered(redis.eval(script, keys, args));
    },
    evalsha: (sha, keys, args) => {
      tap.sent.push({ sha, keys, args });
      return tap.dead ? hang() : answered(redis.evalsha(sha, keys, args));
    },
    exec: (command) => redis.exec(command),
    subscribe(channel: string): ChannelSubscription {
      tap.subscribes += 1;
      if (tap.failing) return failingSubscription();
      const inner = redis.subscribe<unknown>(channel);
      return {
        on<T extends keyof SubscriptionEvents>(
          type: T,
          listener: (event: SubscriptionEvents[T]) => void,
        ) {
          if (type === "subscribe" && tap.neverConfirm) return;
          if (type !== "message") {
            inner.on(type, listener as (event: unknown) => void);
            return;
          }
          const hear = listener as (event: SubscriptionEvents["message"]) => void;
          inner.on("message", (event) => {
            tap.words += 1;
            if (tap.dropWords) return;
            if (tap.delayMs > 0) setTimeout(() => hear(event), tap.delayMs);
            else hear(event);
          });
        },
        unsubscribe: () => inner.unsubscribe(),
      };
    },
  };
  return { redis: client, tap };
}

function failingSubscription(): ChannelSubscription {
  return {
    on<T extends keyof SubscriptionEvents>(
      type: T,
      listener: (event: SubscriptionEvents[T]) => void,
    ) {
      if (type === "error") {
        const fail = listener as (error: Error) => void;
        setTimeout(() => fail(new Error("the stream could not be opened")), 5);
      }
    },
    unsubscribe: async () => {},
  };
}

/**
 * How edgelock speaks to HTTP Redis: an `@upstash/redis` `Redis` as it is, or anything that can
 * `EVAL`/`EVALSHA` (e.g. to add tracing or reach another REST-compatible service).
 */
import { LockInputError } from "../errors.js";

/** What edgelock needs of a Redis client: `eval` and `evalsha` (an `@upstash/redis` client fits), `subscribe` for push mode. */
export interface RedisLike {
  /** `EVAL script numkeys ...keys ...args`; resolves to the script's reply. */
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  /** `EVALSHA sha1 numkeys ...keys ...args`; rejects with a NOSCRIPT error if not cached. */
  evalsha(sha1: string, keys: string[], args: string[]): Promise<unknown>;
  /**
   * Any one command, e.g. `["BLPOP", key, "1.5"]`; needed only by push-mode waiting
   * (`wait.mode: "push"`). `@upstash/redis` has it (`redis.exec`).
   */
  exec?(command: [string, ...string[]]): Promise<unknown>;
  /**
   * Subscribes to one pub/sub channel (Upstash's REST API streams it as server-sent events);
   * needed only by push-mode waiting over a subscription (`wait.wakeBy`). `@upstash/redis` has it
   * (`redis.subscribe`).
   */
  subscribe?(channel: string): ChannelSubscription;
}

/** The events of a ChannelSubscription that push-mode waiting listens to. */
export interface SubscriptionEvents {
  /** The server confirmed the subscription (the number of channels). */
  subscribe: number;
  message: { channel: string; message: unknown };
  /** The stream failed. */
  error: Error;
}

/** What push-mode waiting uses of an `@upstash/redis` `Subscriber`. */
export interface ChannelSubscription {
  on<T extends keyof SubscriptionEvents>(
    type: T,
    listener: (event: SubscriptionEvents[T]) => void,
  ): void;
  /** Ends the stream. */
  unsubscribe(): Promise<void>;
}

/** Whether `redis` can wait for hand-offs over a subscription. */
export function canSubscribe(
  redis: RedisLike,
): redis is RedisLike & Required<Pick<RedisLike, "subscribe">> {
  return typeof redis.subscribe === "function";
}

/**
 * Push-mode waiting (`wait.mode: "push"`) needs a way to be woken that `wakeBy` allows: `exec` for
 * a blocking pop, `subscribe` for a subscription. Checked before any request.
 */
export function checkCanPark(redis: RedisLike, wakeBy: "auto" | "pop" | "subscription"): void {
  const pop = wakeBy !== "subscription" && canBlock(redis);
  const subscription = wakeBy !== "pop" && canSubscribe(redis);
  if (pop || subscription) return;
  const needs =
    wakeBy === "pop"
      ? "a blocking command: redis.exec"
      : wakeBy === "subscription"
        ? "a subscription: redis.subscribe"
        : "a blocking command (redis.exec) or a subscription (redis.subscribe)";
  throw new LockInputError(
    `wait.mode "push" needs a Redis client that can send ${needs}, as an @upstash/redis ` +
      "client can, or a RedisLike with that method.",
  );
}

/** Whether `redis` can send the blocking pop of push-mode waiting. */
export function canBlock(redis: RedisLike): redis is RedisLike & Required<Pick<RedisLike, "exec">> {
  return typeof redis.exec === "function";
}

/** Checks that `value` can serve as the `redis` option. */
export function checkRedisLike(value: unknown): RedisLike {
  const candidate = value as Partial<Record<keyof RedisLike, unknown>> | null | undefined;
  if (
    candidate === null ||
    (typeof candidate !== "object" && typeof candidate !== "function") ||
    typeof candidate.eval !== "function" ||
    typeof candidate.evalsha !== "function"
  ) {
    throw new LockInputError(
      "The redis option must be an @upstash/redis client (new Redis({ url, token })) or an object " +
        "with eval(script, keys, args) and evalsha(sha1, keys, args) methods.",
    );
  }
  return candidate as RedisLike;
}

/**
 * How edgelock speaks to HTTP Redis: an `@upstash/redis` `Redis` as it is, or anything that can
 * `EVAL`/`EVALSHA` (e.g. to add tracing or reach another REST-compatible service); and how a
 * subscription's stream is heard to end.
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

/*
 * Hearing a subscription's stream end. `@upstash/redis`'s Subscriber emits `error` only when the
 * subscribe request fails; when the server (or a proxy closing long-lived streams) ends the
 * body, its reading loop stops without a word, and the subscription looks open for ever. Its
 * `subscribe()` sends the request synchronously (its first `await` is the `fetch` itself), so
 * for the length of that call the global `fetch` is one whose response body reports its end.
 * No other code runs in between. A first send that fails counts as the end too: the client's
 * own re-send would go out through the unwrapped `fetch`, and its end would go unheard (the
 * stream is closed, which aborts that re-send). A RedisLike that fetches otherwise goes
 * unheard, and its silent end costs a park.
 *
 * Closing cancels the body too. `@upstash/redis`'s `unsubscribe()` only aborts the request's
 * signal, and in Deno (2.9) that abort no longer reaches a fetch whose Response has been
 * garbage-collected (the client keeps only its body's reader): the connection stayed open and
 * kept the process up (docs/runtimes.md). Cancelling the body's reader ends it in every runtime.
 */

type Fetch = typeof fetch;

/**
 * `redis.subscribe(channel)`, whose stream calls `ended` once its body ends or fails, and whose
 * `unsubscribe()` cancels that body as well as aborting the request.
 */
export function subscribeHearingEnd(
  redis: RedisLike & Required<Pick<RedisLike, "subscribe">>,
  channel: string,
  ended: () => void,
): ChannelSubscription {
  const scope = globalThis as { fetch?: Fetch };
  const sendsBy = scope.fetch;
  if (typeof sendsBy !== "function") return redis.subscribe(channel);
  let closed = false;
  let cancelBody: (() => void) | undefined;
  const hearing: Fetch = async (input, init) => {
    let response: Response;
    try {
      response = await sendsBy(input, init);
    } catch (error) {
      ended();
      throw error;
    }
    const reporting = reportingEnd(response, ended);
    cancelBody = reporting.cancel;
    // Closed while the request was on its way (its abort did not stop it): end it now.
    if (closed) cancelBody();
    return reporting.response;
  };
  scope.fetch = hearing;
  let subscription: ChannelSubscription;
  try {
    subscription = redis.subscribe(channel);
  } finally {
    // Only if no one replaced it meanwhile (nothing should have).
    if (scope.fetch === hearing) scope.fetch = sendsBy;
  }
  return {
    on: (type, listener) => subscription.on(type, listener),
    async unsubscribe() {
      closed = true;
      try {
        await subscription.unsubscribe();
      } finally {
        cancelBody?.();
      }
    },
  };
}

/**
 * `response` with a body that calls `ended` when it is read to its end, fails or is cancelled;
 * `cancel` ends the underlying body whoever reads it (a no-op once it ended).
 */
function reportingEnd(
  response: Response,
  ended: () => void,
): { response: Response; cancel: () => void } {
  const source = response.body;
  if (!response.ok || source === null) return { response, cancel: () => {} };
  const reader = source.getReader();
  let told = false;
  const tell = () => {
    if (told) return;
    told = true;
    ended();
  };
  // The client closed the stream: a read that fails now ends the body, it is no failure.
  let closing = false;
  const cancel = (reason?: unknown): Promise<void> => {
    tell();
    // Rejects where the body already failed (e.g. aborted): it is over either way.
    return reader.cancel(reason).catch(() => {});
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await reader.read();
        if (done) {
          controller.close();
          tell();
        } else controller.enqueue(value);
      } catch (error) {
        // Closed, not errored, once cancelled (workerd fails the pending read): else
        // @upstash/redis logs "Stream reading error" for every stream the client closes.
        if (closing) controller.close();
        else controller.error(error);
        tell();
      }
    },
    cancel,
  });
  return {
    response: new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    }),
    cancel: () => {
      closing = true;
      void cancel();
    },
  };
}

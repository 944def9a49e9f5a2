/**
 * Hearing a subscription's stream end. `@upstash/redis`'s Subscriber emits `error` only when the
 * subscribe request fails; when the server (or a proxy closing long-lived streams) ends the
 * body, its reading loop stops without a word, and the subscription looks open for ever. Its
 * `subscribe()` sends the request synchronously (its first `await` is the `fetch` itself), so
 * for the length of that call the global `fetch` is one whose response body reports its end.
 * No other code runs in between. A first send that fails counts as the end too: the client's
 * own re-send would go out through the unwrapped `fetch`, and its end would go unheard (the
 * stream is closed, which aborts that re-send). A RedisLike that fetches otherwise goes
 * unheard, and its silent end costs a park.
 */
import type { ChannelSubscription, RedisLike } from "./redis-like.js";

type Fetch = typeof fetch;

/** `redis.subscribe(channel)`, whose stream calls `ended` once its body ends or fails. */
export function subscribeHearingEnd(
  redis: RedisLike & Required<Pick<RedisLike, "subscribe">>,
  channel: string,
  ended: () => void,
): ChannelSubscription {
  const scope = globalThis as { fetch?: Fetch };
  const sendsBy = scope.fetch;
  if (typeof sendsBy !== "function") return redis.subscribe(channel);
  const hearing: Fetch = async (input, init) => {
    let response: Response;
    try {
      response = await sendsBy(input, init);
    } catch (error) {
      ended();
      throw error;
    }
    return reportingEnd(response, ended);
  };
  scope.fetch = hearing;
  try {
    return redis.subscribe(channel);
  } finally {
    // Only if no one replaced it meanwhile (nothing should have).
    if (scope.fetch === hearing) scope.fetch = sendsBy;
  }
}

/** `response` with a body that calls `ended` when it is read to its end, fails or is cancelled. */
function reportingEnd(response: Response, ended: () => void): Response {
  const source = response.body;
  if (!response.ok || source === null) return response;
  const reader = source.getReader();
  let told = false;
  const tell = () => {
    if (told) return;
    told = true;
    ended();
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
        controller.error(error);
        tell();
      }
    },
    cancel(reason) {
      tell();
      return reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

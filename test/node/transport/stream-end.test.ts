/**
 * subscribeHearingEnd: @upstash/redis's Subscriber says nothing when a stream's body ends; the
 * body its subscribe's fetch returns reports the end, a failure, or a first send that failed
 * (whose re-send would go out unheard). The global fetch is the real one again at once.
 * Closing cancels the body itself, whether or not the request's abort reaches the fetch.
 */
import { Redis } from "@upstash/redis";
import { afterEach, describe, expect, it, vi } from "vitest";
import { subscribeHearingEnd } from "../../../src/transport/redis-like.js";

/** A server that confirms the subscription, then ends the body (as a proxy closing it would). */
function sseThatEnds(): typeof fetch {
  return async () =>
    new Response("data: subscribe,hand-offs,1\n\n", {
      headers: { "content-type": "text/event-stream" },
    });
}

const until = async (predicate: () => boolean) => {
  for (let tries = 0; !predicate(); tries++) {
    if (tries > 200) throw new Error("condition not met");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

/** A stream through the stubbed fetch, confirmed by its server; `ended()` counts its ends heard. */
async function confirmedStream() {
  const redis = new Redis({ url: "http://127.0.0.1:9", token: "t" });
  let ended = 0;
  const subscription = subscribeHearingEnd(redis, "hand-offs", () => {
    ended += 1;
  });
  let confirmed = false;
  subscription.on("subscribe", () => {
    confirmed = true;
  });
  await until(() => confirmed);
  return { subscription, ended: () => ended };
}

describe("hearing a subscription's stream end", () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it("@upstash/redis's stream whose body ends is heard, once; fetch is restored", async () => {
    const sent = vi.fn(sseThatEnds());
    vi.stubGlobal("fetch", sent);
    const redis = new Redis({ url: "http://127.0.0.1:9", token: "t" });
    let confirmed = 0;
    let ended = 0;
    const subscription = subscribeHearingEnd(redis, "hand-offs", () => {
      ended += 1;
    });
    subscription.on("subscribe", () => {
      confirmed += 1;
    });
    expect(globalThis.fetch).toBe(sent);
    await until(() => ended > 0);
    expect(confirmed).toBe(1);
    expect(ended).toBe(1);
    expect(sent).toHaveBeenCalledTimes(1);
    await subscription.unsubscribe();
  });

  it("a first send that fails is heard as the end (its re-send would be unheard)", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => {
        throw new TypeError("fetch failed");
      }),
    );
    const redis = new Redis({
      url: "http://127.0.0.1:9",
      token: "t",
      retry: { retries: 1, backoff: () => 50 },
    });
    let ended = 0;
    const subscription = subscribeHearingEnd(redis, "hand-offs", () => {
      ended += 1;
    });
    subscription.on("error", () => {});
    await until(() => ended > 0);
    expect(ended).toBe(1);
    await subscription.unsubscribe();
  });

  it("a stream the client closes reports its end too (closing is idempotent upstream)", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(
        async (_input: unknown, init?: RequestInit) =>
          new Response(
            new ReadableStream<Uint8Array>({
              start(controller) {
                controller.enqueue(new TextEncoder().encode("data: subscribe,hand-offs,1\n\n"));
                init?.signal?.addEventListener("abort", () =>
                  controller.error(new DOMException("aborted", "AbortError")),
                );
              },
            }),
            { headers: { "content-type": "text/event-stream" } },
          ),
      ),
    );
    const { subscription, ended } = await confirmedStream();
    expect(ended()).toBe(0);
    await subscription.unsubscribe();
    await until(() => ended() > 0);
    expect(ended()).toBe(1);
  });

  it("closing cancels the body though the request's abort never reaches it (as in Deno)", async () => {
    let cancelled = 0;
    vi.stubGlobal(
      "fetch",
      vi.fn(
        // A body deaf to the signal: Deno's, once the client dropped the Response itself.
        async () =>
          new Response(
            new ReadableStream<Uint8Array>({
              start(controller) {
                controller.enqueue(new TextEncoder().encode("data: subscribe,hand-offs,1\n\n"));
              },
              cancel() {
                cancelled += 1;
              },
            }),
            { headers: { "content-type": "text/event-stream" } },
          ),
      ),
    );
    const { subscription, ended } = await confirmedStream();
    await subscription.unsubscribe();
    await until(() => cancelled > 0);
    expect(cancelled).toBe(1);
    expect(ended()).toBe(1);
  });
});

/**
 * A hand-off stream no waiter needs any more is closed at the server, even where aborting the
 * subscribe request does not reach its fetch. That is Deno (2.9): `@upstash/redis` keeps only the
 * body's reader of its subscribe's Response, and once that Response is garbage-collected the
 * abort of `unsubscribe()` no longer reaches the fetch, so the stream stayed open and kept the
 * process up (docs/runtimes.md). Node's fetch holds the link, so here the same loss is made by a
 * fetch that drops the subscribe request's signal; the streams are counted by the dev server.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { STREAM_LINGER_MS } from "../../../../src/wait/push/client-state.js";
import { backendKindsUnderTest } from "../../../support/backends.js";
import { freshPrefix, until, useTestBed } from "../../exclusive/testbed.js";

/** The real fetch, except that a subscribe request's abort never reaches it (as in Deno). */
function fetchDeafToStreamAborts(): typeof fetch {
  const real = globalThis.fetch;
  return (input, init) => {
    const stream = new Headers(init?.headers).get("accept") === "text/event-stream";
    return real(input, stream ? { ...init, signal: null } : init);
  };
}

describe.each(backendKindsUnderTest())("closing a hand-off stream on %s", (backend) => {
  const bed = useTestBed(backend, { profile: "upstash" });

  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it("the last waiter gone, its stream closes at the server though the abort is lost", async () => {
    vi.stubGlobal("fetch", fetchDeafToStreamAborts());
    const prefix = freshPrefix();
    const holder = bed.client({ prefix, scriptKeyLocking: true });
    const waiter = bed.client({
      prefix,
      scriptKeyLocking: true,
      wait: { mode: "push", wakeBy: "subscription" },
    });
    const before = bed.server.stats.snapshot().streams;
    const held = await holder.lock("job").acquire({ leaseMs: 30_000 });
    const waiting = waiter.lock("job").acquire({ leaseMs: 10_000, waitMs: 20_000 });
    await until(() => bed.server.stats.snapshot().streams.open === before.open + 1);
    await held.release();
    const next = await waiting;
    // Handed over by word: a 30 s lease leaves nothing else to wake it this soon.
    expect(next.fencingToken).toBe(held.fencingToken + 1);
    await next.release();
    // The stream lingers STREAM_LINGER_MS for a next wait, then closes; before the fix it
    // stayed open until the server closed.
    await until(() => bed.server.stats.snapshot().streams.open === before.open, 5_000);
    const after = bed.server.stats.snapshot().streams;
    expect(after.subscriptions - before.subscriptions).toBe(1);
    expect(STREAM_LINGER_MS).toBeLessThan(5_000);
  });
});

/**
 * The Workers stream budget belongs to the request: a Workers invocation has six connections,
 * and a request keeps at most MAX_STREAMS_ON_WORKERS streams open at once, whatever scopes it
 * nests and however many clients it uses (docs/push.md). Node runs the Workers path here (the
 * clients are made under Workers' user agent: a stream per acquisition, counted), and the local
 * server counts the streams open at once. The same inside workerd: test/workers/push-subscription.test.ts.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { LockClient } from "../../../../src/index.js";
import { MAX_STREAMS_ON_WORKERS } from "../../../../src/wait/push/client-state.js";
import { backendKindsUnderTest } from "../../../support/backends.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("the Workers stream budget on %s", (backend) => {
  const bed = useTestBed(backend, { profile: "upstash" });
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  /** A push-mode client as a Worker has it: streams end with their acquisitions, counted. */
  function workersClient(prefix: string): LockClient {
    vi.stubGlobal("navigator", { userAgent: "Cloudflare-Workers" });
    try {
      return bed.client({
        prefix,
        scriptKeyLocking: true,
        wait: { mode: "push", wakeBy: "subscription" },
      });
    } finally {
      vi.unstubAllGlobals();
    }
  }

  /** `count` acquisitions through `client` waiting at once, each passing the lock on. */
  function waiting(client: LockClient, count: number): Promise<unknown> {
    return Promise.all(
      Array.from({ length: count }, async () =>
        (await client.lock("job").acquire({ leaseMs: 10_000, waitMs: 20_000 })).release(),
      ),
    );
  }

  const streams = () => bed.server.stats.snapshot().streams;

  /** Runs `requests` while the lock is held, then releases it; the most streams open at once. */
  async function peakStreamsWhile(prefix: string, requests: () => Promise<unknown>) {
    const holder = bed.client({ prefix, scriptKeyLocking: true });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    await until(() => streams().open === 0);
    bed.server.stats.reset();
    const served = requests();
    await until(() => streams().open >= MAX_STREAMS_ON_WORKERS);
    // Time for any stream beyond the budget to open.
    await sleepMs(500);
    const openWhileHeld = streams().open;
    await held.release();
    await served;
    expect(await holder.lock("job").isLocked()).toBe(false);
    await until(() => streams().open === 0);
    return { openWhileHeld, peak: streams().peakOpen };
  }

  it(`one request keeps at most ${MAX_STREAMS_ON_WORKERS} streams open, over nested scopes and two clients`, async () => {
    const prefix = freshPrefix();
    const first = workersClient(prefix);
    const second = workersClient(prefix);
    // One request's handler: two sub-tasks in nested scopes through one client, and a second
    // client, each waiting three times at once (nine waits; 9 streams before the fix).
    const { openWhileHeld, peak } = await peakStreamsWhile(prefix, () =>
      first.scope(() =>
        Promise.all([
          first.scope(() => waiting(first, 3)),
          first.scope(() => waiting(first, 3)),
          waiting(second, 3),
        ]),
      ),
    );
    expect(openWhileHeld).toBe(MAX_STREAMS_ON_WORKERS);
    expect(peak).toBe(MAX_STREAMS_ON_WORKERS);
  });

  it(`two requests through the same clients keep ${MAX_STREAMS_ON_WORKERS} each`, async () => {
    const prefix = freshPrefix();
    const first = workersClient(prefix);
    const second = workersClient(prefix);
    const request = () =>
      first.scope(() => Promise.all([waiting(first, 2), first.scope(() => waiting(second, 2))]));
    const { openWhileHeld, peak } = await peakStreamsWhile(prefix, () =>
      Promise.all([request(), request()]),
    );
    expect(openWhileHeld).toBe(2 * MAX_STREAMS_ON_WORKERS);
    expect(peak).toBe(2 * MAX_STREAMS_ON_WORKERS);
  });

  it(`outside any scope every client shares one budget of ${MAX_STREAMS_ON_WORKERS}`, async () => {
    const prefix = freshPrefix();
    const first = workersClient(prefix);
    const second = workersClient(prefix);
    const { openWhileHeld, peak } = await peakStreamsWhile(prefix, () =>
      Promise.all([waiting(first, 3), waiting(second, 3)]),
    );
    expect(openWhileHeld).toBe(MAX_STREAMS_ON_WORKERS);
    expect(peak).toBe(MAX_STREAMS_ON_WORKERS);
  });
});

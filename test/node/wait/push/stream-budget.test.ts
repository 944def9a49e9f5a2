/**
 * The Workers stream budget belongs to the request: a Workers invocation has six connections,
 * and a request keeps at most MAX_STREAMS_ON_WORKERS streams open at once, whatever scopes it
 * nests and however many clients it uses (docs/push.md). Node runs the Workers path here (the
 * clients are made under Workers' user agent: a stream per acquisition, counted). Two observers
 * outside the library count: the local server's streams open while the lock is held (a quiet
 * moment, so exact), and the chaos harness's counting fetch (ConnectionBudget), which sees the
 * connections as the Workers runtime does: a stream closes when its fetch is aborted or its body
 * ends or is cancelled. The server's own peak is no measure of that: it hears a close only when the
 * socket does, after the client's next stream may have opened. The same inside workerd:
 * test/workers/push-subscription.test.ts.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { LockClient } from "../../../../src/index.js";
import { MAX_STREAMS_ON_WORKERS } from "../../../../src/wait/push/client-state.js";
import { ConnectionBudget } from "../../../chaos/request-budget.js";
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

  /**
   * Runs `requests` while the lock is held, then releases it. Each call of the `request` it is
   * given is one Workers request. Returns the streams the server had open while the lock was
   * held, and what the counting fetch saw: the most streams any one request had open at once,
   * the requests that reached their budget, and the budget's violations.
   */
  async function streamsWhile(
    prefix: string,
    requests: (request: <T>(handler: () => Promise<T>) => Promise<T>) => Promise<unknown>,
  ) {
    const holder = bed.client({ prefix, scriptKeyLocking: true });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    await until(() => streams().open === 0);
    const budget = new ConnectionBudget();
    try {
      const served = requests((handler) => budget.run(handler));
      await until(() => streams().open >= MAX_STREAMS_ON_WORKERS);
      // Time for any stream beyond the budget to open.
      await sleepMs(500);
      const openWhileHeld = streams().open;
      await held.release();
      await served;
      expect(await holder.lock("job").isLocked()).toBe(false);
      await until(() => streams().open === 0);
      return {
        openWhileHeld,
        peakPerRequest: budget.counts.peakStreams,
        atBudget: budget.counts.atStreamBudget,
        violations: budget.result().examples,
      };
    } finally {
      budget.stop();
    }
  }

  it(`one request keeps at most ${MAX_STREAMS_ON_WORKERS} streams open, over nested scopes and two clients`, async () => {
    const prefix = freshPrefix();
    const first = workersClient(prefix);
    const second = workersClient(prefix);
    // One request's handler: two sub-tasks in nested scopes through one client, and a second
    // client, each waiting three times at once (nine waits; 9 streams before the fix).
    const seen = await streamsWhile(prefix, (request) =>
      request(() =>
        first.scope(() =>
          Promise.all([
            first.scope(() => waiting(first, 3)),
            first.scope(() => waiting(first, 3)),
            waiting(second, 3),
          ]),
        ),
      ),
    );
    expect(seen.openWhileHeld).toBe(MAX_STREAMS_ON_WORKERS);
    expect(seen).toMatchObject({ peakPerRequest: MAX_STREAMS_ON_WORKERS, violations: [] });
  });

  it(`two requests through the same clients keep ${MAX_STREAMS_ON_WORKERS} each`, async () => {
    const prefix = freshPrefix();
    const first = workersClient(prefix);
    const second = workersClient(prefix);
    const handler = () =>
      first.scope(() => Promise.all([waiting(first, 2), first.scope(() => waiting(second, 2))]));
    const seen = await streamsWhile(prefix, (request) =>
      Promise.all([request(handler), request(handler)]),
    );
    expect(seen.openWhileHeld).toBe(2 * MAX_STREAMS_ON_WORKERS);
    expect(seen).toMatchObject({
      peakPerRequest: MAX_STREAMS_ON_WORKERS,
      atBudget: 2,
      violations: [],
    });
  });

  it(`outside any scope every client shares one budget of ${MAX_STREAMS_ON_WORKERS}`, async () => {
    const prefix = freshPrefix();
    const first = workersClient(prefix);
    const second = workersClient(prefix);
    // The counting fetch's request is the test's own here: the library sees no scope.
    const seen = await streamsWhile(prefix, (request) =>
      request(() => Promise.all([waiting(first, 3), waiting(second, 3)])),
    );
    expect(seen.openWhileHeld).toBe(MAX_STREAMS_ON_WORKERS);
    expect(seen).toMatchObject({ peakPerRequest: MAX_STREAMS_ON_WORKERS, violations: [] });
  });
});

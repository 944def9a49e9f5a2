/**
 * A polling waiter behind a long hold waits as long as it was told, at a cost that grows with the
 * logarithm of the wait (issue 43): its blind backoff grows with the time it has waited
 * (src/wait/poll.ts, waitedBackoffMs), never past the holder's lease end.
 *
 * The bound on requests: until the backoff from the time waited takes over (about the first
 * second) the ≤ 250 ms jitter of `maxDelayMs` costs at most about 15 requests; from then on each
 * sleep is at least an eighth of the time waited, so T ms of waiting cost at most
 * ln(T / 1000) / ln(1.125) more: 26 for 20 s. 45 leaves room for slow round trips.
 */
import { describe, expect, it } from "vitest";
import type { LockClient } from "../../../src/index.js";
import { WAITED_BACKOFF_SHARE } from "../../../src/wait/poll.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";

/** Past the ~13 s in which the old 250 ms backoff spent the old budget of 100 polls. */
const RELEASE_AFTER_MS = 16_000;
const MAX_REQUESTS = 45;

describe.each(backendKindsUnderTest())("a sole polling waiter behind a long hold on %s", (kind) => {
  const bed = useTestBed(kind);

  /** A waiter polling (or, `onDefaults`, on the defaults), counting its attempts. */
  function waiterOf(
    prefix: string,
    onDefaults = false,
  ): { client: LockClient; attempts: () => number } {
    let attempts = 0;
    const client = bed.client({
      prefix,
      ...(onDefaults ? {} : { wait: { mode: "poll" } }),
      observer: {
        onAttempt: (script) => {
          if (script.name === "lock.acquire") attempts += 1;
        },
      },
    });
    return { client, attempts: () => attempts };
  }

  async function waitBehind(holder: { release(): Promise<unknown> }, waiter: LockClient) {
    const started = Date.now();
    let releasedAt = Number.POSITIVE_INFINITY;
    const releasing = sleepMs(RELEASE_AFTER_MS).then(async () => {
      releasedAt = Date.now();
      await holder.release();
    });
    // The holder releases even when the wait failed (no release after the server closed).
    const handle = await waiter
      .lock("job")
      .acquire({ leaseMs: 10_000, waitMs: 45_000 })
      .finally(() => releasing);
    const servedAt = Date.now();
    await handle.release();
    return { servedAfterReleaseMs: servedAt - releasedAt, waitedAtRelease: releasedAt - started };
  }

  it("behind a 25 s lease: served after the release, within a share of the time waited, in few requests", async () => {
    const prefix = freshPrefix();
    const holder = await bed.client({ prefix }).lock("job").acquire({ leaseMs: 25_000 });
    const { client, attempts } = waiterOf(prefix);
    const { servedAfterReleaseMs, waitedAtRelease } = await waitBehind(holder, client);
    expect(servedAfterReleaseMs).toBeGreaterThanOrEqual(0);
    expect(servedAfterReleaseMs).toBeLessThan(WAITED_BACKOFF_SHARE * waitedAtRelease + 1_000);
    expect(attempts()).toBeLessThanOrEqual(MAX_REQUESTS);
  }, 40_000);

  it("behind a watchdog-mode holder: the same", async () => {
    const prefix = freshPrefix();
    const holder = await bed.client({ prefix }).lock("job").acquire();
    const { client, attempts } = waiterOf(prefix);
    const { servedAfterReleaseMs, waitedAtRelease } = await waitBehind(holder, client);
    expect(servedAfterReleaseMs).toBeGreaterThanOrEqual(0);
    expect(servedAfterReleaseMs).toBeLessThan(WAITED_BACKOFF_SHARE * waitedAtRelease + 1_000);
    expect(attempts()).toBeLessThanOrEqual(MAX_REQUESTS);
  }, 40_000);

  it("on the defaults (push over a subscription): served at the release, a park per 5 s", async () => {
    const prefix = freshPrefix();
    const holder = await bed.client({ prefix }).lock("job").acquire({ leaseMs: 25_000 });
    const { client, attempts } = waiterOf(prefix, true);
    const { servedAfterReleaseMs } = await waitBehind(holder, client);
    expect(servedAfterReleaseMs).toBeGreaterThanOrEqual(0);
    expect(servedAfterReleaseMs).toBeLessThan(1_000);
    // An attempt before the stream, then one per park of `parkMs` (5 s): about 5 in 16 s.
    expect(attempts()).toBeLessThanOrEqual(10);
  }, 40_000);

  it("on the defaults behind a long lease, parks grow with the wait: at most 10 requests, served at the release", async () => {
    // Issue 43's sole waiter (a 60 s lease, waitMs 45 s, released at 44 s) at a fifth of its
    // scale, `parkMs` included: before parks grew, one attempt per park (11 here, and a
    // SUBSCRIBE).
    const parkMs = 1_000;
    const prefix = freshPrefix();
    const holder = await bed.client({ prefix }).lock("job").acquire({ leaseMs: 12_000 });
    let attempts = 0;
    const client = bed.client({
      prefix,
      wait: { parkMs },
      observer: {
        onAttempt: (script) => {
          if (script.name === "lock.acquire") attempts += 1;
        },
      },
    });
    bed.server.stats.reset();
    const started = Date.now();
    let releasedAt = Number.POSITIVE_INFINITY;
    const releasing = sleepMs(8_800).then(async () => {
      releasedAt = Date.now();
      await holder.release();
    });
    const handle = await client
      .lock("job")
      .acquire({ leaseMs: 10_000, waitMs: 9_000 })
      .finally(() => releasing);
    const servedAfterReleaseMs = Date.now() - releasedAt;
    await handle.release();
    const { subscriptions } = bed.server.stats.snapshot().streams;
    expect(servedAfterReleaseMs).toBeGreaterThanOrEqual(0);
    expect(servedAfterReleaseMs).toBeLessThan(1_000);
    expect(subscriptions).toBe(1);
    // Two before the stream is confirmed, one per `parkMs` until the wait is twice as long,
    // then each park a share of the wait (WAITED_PARK_SHARE): attempts at about 0, 0, 0, 1, 2,
    // 3, 4.5 and 6.8 s, then the release's word.
    expect(attempts + subscriptions).toBeLessThanOrEqual(10);
    expect(Date.now() - started).toBeLessThan(12_000);
  }, 30_000);
});

/**
 * A burst to a cold isolate off Upstash's domain (issue 43): a fresh client on the local server
 * (loopback URL, `upstash` profile) sends a script's text with its first EVAL; the calls made
 * while that EVAL is unanswered send EVALSHA first, so a burst of acquisitions costs one full
 * text, not one per call (before: every call of the burst sent the ~4 KB text).
 */
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { LockClient } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, useTestBed } from "../exclusive/testbed.js";

const BURST = 20;

describe.each(backendKindsUnderTest())("a burst to a cold client on %s", (backend) => {
  const bed = useTestBed(backend, { profile: "upstash" });

  /** A cold isolate: a LockClient on a Redis client of its own, nothing sent yet. */
  const coldClient = (prefix: string) =>
    new LockClient({
      redis: new Redis({ url: bed.server.url, token: bed.server.token }),
      prefix,
    });

  /** BURST acquisitions at once (one key each), released; the EVALs the server received. */
  async function burst(client: LockClient) {
    const before = bed.server.stats.snapshot();
    const held = await Promise.all(
      Array.from({ length: BURST }, (_, i) =>
        client.lock(`job-${i}`).tryAcquire({ leaseMs: 5_000 }),
      ),
    );
    const after = bed.server.stats.snapshot();
    await Promise.all(held.map((handle) => handle?.release()));
    return {
      acquired: held.filter((handle) => handle !== null).length,
      evals: (after.commandsByName.eval ?? 0) - (before.commandsByName.eval ?? 0),
    };
  }

  it("a database that has the script gets its text once, not once per call", async () => {
    const prefix = freshPrefix();
    await burst(coldClient(prefix)); // the server caches the script and answers the key-locking flag
    const { acquired, evals } = await burst(coldClient(prefix));
    expect(acquired).toBe(BURST);
    expect(evals, "full script texts sent by the burst").toBe(1);
  });

  it("a database without the script: every call of the burst still acquires", async () => {
    const prefix = freshPrefix();
    await burst(coldClient(prefix));
    await bed.redis().scriptFlush();
    // The EVALSHAs that reach the server before the first EVAL are told NOSCRIPT and send EVAL.
    const { acquired, evals } = await burst(coldClient(prefix));
    expect(acquired).toBe(BURST);
    expect(evals).toBeGreaterThanOrEqual(1);
    expect(evals).toBeLessThanOrEqual(BURST);
  });
});

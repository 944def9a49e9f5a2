/**
 * Scripts as EVALSHA first on Upstash itself (issue 42): a cold isolate (a fresh client) of a
 * database that already caches the scripts sends no script text; after SCRIPT FLUSH a script
 * costs one NOSCRIPT, then one EVAL, and EVALSHA again after. The clients use an `upstash.io`
 * URL, which reaches the local server (`upstash` profile): only the address is redirected, every
 * request is answered by the real server.
 */
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LockClient } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, useTestBed } from "../exclusive/testbed.js";

const UPSTASH_URL = "https://edgelock-test.upstash.io";

describe.each(backendKindsUnderTest())("scripts as EVALSHA first on %s", (backend) => {
  const bed = useTestBed(backend, { profile: "upstash" });

  beforeAll(() => {
    const realFetch = globalThis.fetch;
    vi.stubGlobal("fetch", (input: string | URL | Request, init?: RequestInit) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      return realFetch(
        url.startsWith(UPSTASH_URL) ? bed.server.url + url.slice(UPSTASH_URL.length) : input,
        init,
      );
    });
  });
  afterAll(() => {
    vi.unstubAllGlobals();
  });

  /** A client as a cold isolate on Upstash has: a LockClient on a Redis client of its own. */
  const coldClient = () =>
    new LockClient({
      redis: new Redis({ url: UPSTASH_URL, token: bed.server.token }),
      prefix: freshPrefix(),
    });

  /** What the server received while `operation` ran: requests, EVALs, EVALSHAs. */
  async function sent<T>(operation: () => Promise<T>) {
    const before = bed.server.stats.snapshot();
    const result = await operation();
    const after = bed.server.stats.snapshot();
    const count = (name: string) =>
      (after.commandsByName[name] ?? 0) - (before.commandsByName[name] ?? 0);
    return {
      result,
      requests: after.requests - before.requests,
      evals: count("eval"),
      evalshas: count("evalsha"),
    };
  }

  /** Acquire, re-enter, extend, release: every script of an uncontended lock cycle. */
  async function cycle(client: LockClient): Promise<void> {
    const held = await client.lock("job").acquire({ leaseMs: 5_000 });
    await (await client.lock("job").acquire({ leaseMs: 5_000, owner: held.owner })).release();
    await held.extend(6_000);
    await held.release();
  }

  it("a fresh client of a database that has the scripts sends no EVAL, one request per operation", async () => {
    await cycle(coldClient()); // the server answers the key-locking flag and caches the scripts
    const cold = coldClient();
    const { requests, evals, evalshas } = await sent(() => cycle(cold));
    expect(evals, "script text sent").toBe(0);
    expect(evalshas).toBe(5);
    expect(requests).toBe(5);
  });

  it("after SCRIPT FLUSH: one NOSCRIPT, then EVAL, per script; then EVALSHA alone", async () => {
    await cycle(coldClient());
    await bed.redis().scriptFlush();
    const client = coldClient();
    const first = await sent(() => client.lock("job").acquire({ leaseMs: 5_000 }));
    expect(first.requests).toBe(2); // EVALSHA → NOSCRIPT, then EVAL
    expect(first.evalshas).toBe(1);
    expect(first.evals).toBe(1);
    const release = await sent(() => first.result.release());
    expect([release.evalshas, release.evals]).toEqual([1, 1]);
    const extend = await sent(() => cycle(client)); // the extend script: the one not sent yet
    expect([extend.evals, extend.requests]).toEqual([1, 6]);
    const again = await sent(() => cycle(client));
    expect(again.evals).toBe(0);
    expect(again.requests).toBe(5);
  });
});

/**
 * Issue 29 item 1: a failing backend is named. `@upstash/redis` on its defaults re-sends a request
 * whose fetch threw for ~4 s, longer than backendTimeoutMs, so a closed port used to show as
 * "no answer within 2000 ms"; a missing URL or token did too. Now: a missing URL or token is a
 * LockInputError from the constructor, and a refused connection, a TLS error or a refused token
 * is named in the LockBackendError, within the time budget, with no secret in it.
 */
import { Redis } from "@upstash/redis";
import { describe, expect, it, vi } from "vitest";
import { LockBackendError, LockClient, LockInputError } from "../../../src/index.js";
import { describeFetchFailure } from "../../../src/transport/diagnose.js";
import { freshPrefix, useTestBed } from "../exclusive/testbed.js";
import { closedPort } from "./http-doubles.js";

const TOKEN = "a-rest-token-that-must-never-show-0123456789";

/** An @upstash/redis client on its defaults (5 re-sends when fetch throws), quiet. */
function defaultRedis(url: string, token = TOKEN): Redis {
  return new Redis({ url, token, enableTelemetry: false });
}

async function failureOf(client: LockClient): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  const error = await client
    .lock("orders:1")
    .tryAcquire({ leaseMs: 1_000 })
    .then(
      () => undefined,
      (caught: unknown) => caught,
    );
  return { error, ms: Date.now() - started };
}

function messages(error: unknown): string {
  const parts: string[] = [];
  for (let at = error; at instanceof Error; at = at.cause) parts.push(at.message, at.stack ?? "");
  return parts.join("\n");
}

describe("backend failures name their cause", () => {
  const bed = useTestBed("embedded");

  it("a missing URL or token is a LockInputError from new LockClient(), before any request", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const noUrl = new Redis({ url: undefined as unknown as string, token: TOKEN });
      const noToken = new Redis({
        url: "http://127.0.0.1:1",
        token: undefined as unknown as string,
      });
      const empty = new Redis({ url: "", token: "" });
      expect(() => new LockClient({ redis: noUrl })).toThrow(LockInputError);
      expect(() => new LockClient({ redis: noUrl })).toThrow(/UPSTASH_REDIS_REST_URL/);
      expect(() => new LockClient({ redis: noToken })).toThrow(/UPSTASH_REDIS_REST_TOKEN/);
      expect(() => new LockClient({ redis: empty })).toThrow(/no url .* and no token/);
      expect(() => new LockClient({ redis: noUrl })).not.toThrow(new RegExp(TOKEN));
    } finally {
      warn.mockRestore();
    }
  });

  it("a closed port: 'connection refused', within backendTimeoutMs, despite @upstash/redis's re-sends", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const client = new LockClient({ redis: defaultRedis(url), backendTimeoutMs: 1_000 });
    const { error, ms } = await failureOf(client);
    expect(error).toBeInstanceOf(LockBackendError);
    expect((error as Error).message).toMatch(/connection refused by 127\.0\.0\.1:\d+/);
    // Generous: the budget (1 s) plus scheduling slack on a loaded machine.
    expect(ms).toBeLessThan(4_000);
    expect(messages(error)).not.toContain(TOKEN);
  });

  it("a closed port with retry: { retries: 0 }: named at once from the fetch error", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const redis = new Redis({ url, token: TOKEN, enableTelemetry: false, retry: { retries: 0 } });
    const client = new LockClient({ redis, retries: 0 });
    const { error, ms } = await failureOf(client);
    expect((error as Error).message).toMatch(/connection refused/);
    expect(ms).toBeLessThan(1_500);
  });

  it("https:// to a plain-HTTP server: a TLS failure", async () => {
    const url = bed.server.url.replace("http://", "https://");
    // The cause comes from a probe sent at half the budget and given the other half: 3 s leaves
    // it room on a loaded machine (with 1 s, CI once saw the probe run out and only a timeout).
    const client = new LockClient({ redis: defaultRedis(url), backendTimeoutMs: 3_000 });
    const { error } = await failureOf(client);
    expect((error as Error).message).toMatch(/TLS handshake failed with 127\.0\.0\.1:\d+/);
    expect(messages(error)).not.toContain(TOKEN);
  });

  it("a wrong token: the REST token refused (HTTP 401)", async () => {
    const client = new LockClient({ redis: defaultRedis(bed.server.url), prefix: freshPrefix() });
    const { error } = await failureOf(client);
    expect((error as Error).message).toMatch(/REST token refused/);
    expect(messages(error)).not.toContain(TOKEN);
  });

  it("recognises DNS and TLS errors as runtimes report them", () => {
    const dns = new TypeError("fetch failed", {
      cause: Object.assign(new Error("getaddrinfo ENOTFOUND db.invalid"), { code: "ENOTFOUND" }),
    });
    expect(describeFetchFailure(dns, "db.invalid")).toMatch(/DNS lookup failed for db\.invalid/);
    const tls = new TypeError("fetch failed", {
      cause: Object.assign(new Error("self-signed certificate"), {
        code: "DEPTH_ZERO_SELF_SIGNED_CERT",
      }),
    });
    expect(describeFetchFailure(tls, "h")).toMatch(/TLS handshake/);
    expect(describeFetchFailure(new Error("something else"), "h")).toBeUndefined();
  });
});

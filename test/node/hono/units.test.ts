/** The parts that need no Redis: option checks, key extractors, fingerprints, stored responses. */
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import {
  fromHeader,
  fromJsonBody,
  githubDelivery,
  idempotency,
  type KeyExtractor,
  requestFingerprint,
  standardWebhookId,
  stripeEventId,
  withLock,
} from "../../../src/hono/index.js";
import {
  decodeRecord,
  encodeRecord,
  recordResponse,
  replayResponse,
} from "../../../src/hono/recorded-response.js";
import { LockClient, LockInputError, type RedisLike } from "../../../src/index.js";

describe("middleware options", () => {
  const redis: RedisLike = { eval: async () => null, evalsha: async () => null };
  const client = new LockClient({ redis });

  it("are checked when the middleware is built, before any request", () => {
    const bad: (() => unknown)[] = [
      () => withLock({} as never),
      () => withLock({ client, key: () => "k", leaseMS: 10 } as never),
      () => withLock({ client, key: () => "k", leaseMs: 5 }),
      () => withLock({ client, key: () => "k", waitMs: -1 }),
      () => withLock({ key: () => "k" } as never),
      () => withLock({ client, key: () => "k", lock: () => client.lock("k") } as never),
      () => withLock({ lock: client.lock("k") } as never),
      () => withLock({ lock: () => client.lock("k"), client: {} as LockClient }),
      () => idempotency({} as never),
      () => idempotency({ redis: {} as RedisLike }),
      () => idempotency({ redis, ttlMs: 10 }),
      () => idempotency({ redis, namespace: "a{b}" }),
      () => idempotency({ redis, ttl: 1000 } as never),
      () => idempotency({ redis, client }),
      () => idempotency({ client, prefix: "other" }),
      () => idempotency({ client: {} as LockClient }),
      () => idempotency({ client, scope: "global" as never }),
      () => idempotency({ client, tenant: "acme" as never }),
    ];
    for (const build of bad) expect(build).toThrow(LockInputError);
    expect(() => withLock({ client, key: () => "k" })).not.toThrow();
    expect(() => withLock({ lock: () => client.fairLock("k") })).not.toThrow();
    expect(() => idempotency({ redis })).not.toThrow();
    expect(() => idempotency({ client, scope: "shared", tenant: () => "acme" })).not.toThrow();
    expect(() => idempotency({ client: () => client })).not.toThrow();
  });
});

async function extract(
  extractor: KeyExtractor,
  init: { headers?: Record<string, string>; body?: string },
): Promise<string | undefined> {
  const app = new Hono();
  let key: string | undefined;
  app.post("/", async (c) => {
    key = await extractor(c);
    // The body stays readable for the handler.
    // guard: a request sent without a body has none to read again.
    if (init.body !== undefined) expect(await c.req.text()).toBe(init.body);
    return c.text("ok");
  });
  await app.request("/", { method: "POST", ...init });
  return key;
}

describe("key extractors", () => {
  it("read headers, unquoting Structured Field strings", async () => {
    expect(await extract(fromHeader(), { headers: { "Idempotency-Key": "abc-1" } })).toBe("abc-1");
    expect(await extract(fromHeader(), { headers: { "idempotency-key": '"8e03-\\"x"' } })).toBe(
      '8e03-"x',
    );
    expect(await extract(fromHeader(), { headers: { "idempotency-key": "  " } })).toBeUndefined();
    expect(await extract(fromHeader(), {})).toBeUndefined();
    expect(await extract(githubDelivery(), { headers: { "X-GitHub-Delivery": "72d3162e" } })).toBe(
      "72d3162e",
    );
    expect(await extract(standardWebhookId(), { headers: { "webhook-id": "msg_2" } })).toBe(
      "msg_2",
    );
  });

  it("read JSON body fields by dotted path", async () => {
    const body = JSON.stringify({ id: "evt_1", data: { object: { id: 42, nothing: null } } });
    expect(await extract(stripeEventId(), { body })).toBe("evt_1");
    expect(await extract(fromJsonBody("data.object.id"), { body })).toBe("42");
    expect(await extract(fromJsonBody("data.object.nothing"), { body })).toBeUndefined();
    expect(await extract(fromJsonBody("data.missing.id"), { body })).toBeUndefined();
    expect(await extract(stripeEventId(), { body: "not json" })).toBeUndefined();
  });
});

describe("request fingerprints and recorded responses", () => {
  it("fingerprint method, path, query and body, not headers", async () => {
    const app = new Hono();
    app.all("*", async (c) => c.text(await requestFingerprint(c)));
    const print = async (path: string, init: RequestInit) => (await app.request(path, init)).text();
    const base = await print("/hook?a=1", { method: "POST", body: "x", headers: { t: "1" } });
    expect(await print("/hook?a=1", { method: "POST", body: "x", headers: { t: "2" } })).toBe(base);
    expect(await print("/hook?a=2", { method: "POST", body: "x" })).not.toBe(base);
    expect(await print("/hook?a=1", { method: "PUT", body: "x" })).not.toBe(base);
    expect(await print("/hook?a=1", { method: "POST", body: "y" })).not.toBe(base);
    expect(base).toMatch(/^[0-9a-f]{64}$/);
  });

  it("round-trip status, chosen headers and binary bodies", async () => {
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    const original = new Response(bytes, {
      status: 202,
      headers: { "content-type": "application/octet-stream", "set-cookie": "s=1", "x-a": "b" },
    });
    const record = await recordResponse(original, "fp", ["content-type", "x-a", "location"], 100);
    expect(await original.arrayBuffer()).toEqual(bytes.buffer);
    const decoded = decodeRecord(encodeRecord(record));
    expect(decoded).toEqual(record);
    const replay = replayResponse(decoded!);
    expect(replay.status).toBe(202);
    const names: string[] = [];
    replay.headers.forEach((_value, name) => {
      names.push(name);
    });
    expect(names.sort()).toEqual(["content-type", "idempotent-replayed", "x-a"]);
    expect(new Uint8Array(await replay.arrayBuffer())).toEqual(bytes);
  });

  it("reject values that are not records", () => {
    expect(decodeRecord("plain")).toBeNull();
    expect(decodeRecord('edgelock-response/1 {"status":"200"}')).toBeNull();
    expect(decodeRecord(42)).toBeNull();
  });
});

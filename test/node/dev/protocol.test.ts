/**
 * The REST protocol as @upstash/redis 1.39 uses it, driven by the real client on its defaults
 * (auto-pipelining, base64 responses), against every backend kind available.
 */
import { errors } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { backendKindsUnderTest, withDevServer } from "../../support/backends.js";
import { base64, rawRequest, uniqueKey, upstash } from "../../support/rest.js";

describe.each(backendKindsUnderTest())("Upstash REST protocol on %s", (kind) => {
  const server = withDevServer(kind);

  describe("values", () => {
    it("round-trips strings that look like numbers, booleans or JSON", async () => {
      const redis = upstash(server());
      const raw = upstash(server(), { automaticDeserialization: false });
      const cases: Array<[string, unknown]> = [
        ["123", 123],
        ["true", true],
        ['{"a":1}', { a: 1 }],
        ["1.0", "1.0"],
        ["null", null],
        ["hello world", "hello world"],
      ];
      for (const [value, deserialized] of cases) {
        const key = uniqueKey();
        expect(await redis.set(key, value)).toBe("OK");
        expect(await redis.get(key)).toEqual(deserialized);
        expect(await raw.get(key)).toBe(value);
      }
    });

    it("round-trips unicode and control characters", async () => {
      const redis = upstash(server(), { automaticDeserialization: false });
      const value = 'héllo wörld 😀 \u0000\u0001 \u00ff ｶﾀｶﾅ \r\n\t "quoted" \\ \u2028';
      const key = uniqueKey();
      await redis.set(key, value);
      expect(await redis.get(key)).toBe(value);
      expect(await redis.strlen(key)).toBe(Buffer.byteLength(value, "utf8"));
    });

    it("returns raw bytes exactly, base64-encoded, even when they are not UTF-8", async () => {
      const key = uniqueKey();
      const bytes = Uint8Array.of(0xff, 0x00, 0xfe, 0x80, 0x0a);
      const stored = await rawRequest(server(), `/set/${encodeURIComponent(key)}`, { body: bytes });
      expect(stored.json()).toEqual({ result: "OK" });
      const read = await rawRequest(server(), "/", {
        body: ["get", key],
        headers: { "Upstash-Encoding": "base64" },
      });
      expect(read.json()).toEqual({ result: base64(bytes) });
    });

    it("keeps values that look like OK or like base64 intact", async () => {
      const redis = upstash(server());
      const ok = uniqueKey();
      const b64ok = uniqueKey();
      await redis.set(ok, "OK");
      await redis.set(b64ok, "T0s=");
      expect(await redis.get(ok)).toBe("OK");
      expect(await redis.get(b64ok)).toBe("T0s=");
      expect(await redis.mget(ok, b64ok, uniqueKey())).toEqual(["OK", "T0s=", null]);
      // On the wire: a bulk "OK" is base64 like any string; only the top-level OK status is raw.
      const wire = await rawRequest(server(), "/pipeline", {
        body: [
          ["set", ok, "OK"],
          ["get", ok],
        ],
        headers: { "Upstash-Encoding": "base64" },
      });
      expect(wire.json()).toEqual([{ result: "OK" }, { result: base64("OK") }]);
    });

    it("keeps every digit of integers beyond 2^53", async () => {
      const key = uniqueKey();
      const redis = upstash(server());
      await redis.set(key, "9007199254740990");
      // The reply is a JSON number; JSON.parse in the client rounds it, but the wire is exact.
      await redis.incrby(key, 3);
      expect(await redis.get(key)).toBe("9007199254740993");
      const plain = upstash(server(), { responseEncoding: false, automaticDeserialization: false });
      expect(await plain.get(key)).toBe("9007199254740993");

      const wire = await rawRequest(server(), "/", {
        body: `["incrby","${key}",9007199254740993]`,
      });
      expect(wire.text).toBe('{"result":18014398509481986}');
      const negative = await rawRequest(server(), "/", {
        body: `["set","${key}",-9223372036854775808]`,
      });
      expect(negative.status).toBe(200);
      expect((await rawRequest(server(), "/", { body: ["decr", key] })).text).toMatch(/overflow/);
    });

    it("sends numeric arguments as plain digits: SET PX 3600000 and long leases work", async () => {
      const redis = upstash(server());
      const key = uniqueKey();
      expect(await redis.set(key, "v", { px: 3_600_000 })).toBe("OK");
      expect(await redis.pttl(key)).toBeGreaterThan(3_590_000);
      expect(await redis.set(key, "v", { px: 1_000_000 })).toBe("OK");
      expect(await redis.pexpire(key, 86_400_000)).toBe(1);
      expect(await redis.pttl(key)).toBeGreaterThan(86_000_000);
      // A hand-written body in exponent notation still means the same integer.
      const wire = await rawRequest(server(), "/", { body: `["set","${key}","v","PX",3.6e6]` });
      expect(wire.json()).toEqual({ result: "OK" });
      expect(await redis.incrbyfloat(uniqueKey(), 0.1)).toBeCloseTo(0.1);
    });
  });

  describe("scripts", () => {
    it("runs EVAL and EVALSHA, with keys and arguments", async () => {
      const redis = upstash(server());
      const key = uniqueKey();
      const script = "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])";
      expect(await redis.eval(script, [key], ["v1"])).toBe("v1");
      const sha = await redis.scriptLoad(script);
      expect(sha).toMatch(/^[0-9a-f]{40}$/);
      expect(await redis.evalsha(sha, [key], [42])).toBe(42);
      expect(await redis.scriptExists(sha)).toEqual([1]);
    });

    it("returns nested arrays, integers, nils and statuses from Lua", async () => {
      const source =
        "return {1, 'two', {3, {'four', 'OK'}}, redis.status_reply('OK'), 'true', '{\"a\":1}'}";
      expect(await upstash(server()).eval(source, [], [])).toEqual([
        1,
        "two",
        [3, ["four", "OK"]],
        "OK",
        true,
        { a: 1 },
      ]);
      expect(await upstash(server(), { responseEncoding: false }).eval(source, [], [])).toEqual([
        1,
        "two",
        [3, ["four", "OK"]],
        "OK",
        true,
        { a: 1 },
      ]);
      const wire = await rawRequest(server(), "/", {
        body: ["eval", "return {1, {'x', redis.status_reply('OK')}, false}", 0],
        headers: { "Upstash-Encoding": "base64" },
      });
      // Lua false becomes nil; nested statuses are base64 like every nested string.
      expect(wire.json()).toEqual({ result: [1, [base64("x"), base64("OK")], null] });
    });

    it("turns a Lua error into an UpstashError", async () => {
      await expect(
        upstash(server()).eval("return redis.error_reply('MY failure')", [], []),
      ).rejects.toThrow(/MY failure/);
    });

    it("createScript: EVALSHA, NOSCRIPT, EVAL the first time, then EVALSHA only; again after SCRIPT FLUSH", async () => {
      const redis = upstash(server());
      const stats = server().stats;
      // A unique script body, so no earlier test has cached it.
      const script = redis.createScript<string>(`-- ${uniqueKey("script")}\nreturn ARGV[1]`);

      stats.reset();
      expect(await script.exec([], ["first"])).toBe("first");
      let snapshot = stats.snapshot();
      expect(snapshot.commandsByName).toEqual({ evalsha: 1, eval: 1 });
      expect(snapshot.requests).toBe(2);

      stats.reset();
      expect(await script.exec([], ["second"])).toBe("second");
      snapshot = stats.snapshot();
      expect(snapshot.commandsByName).toEqual({ evalsha: 1 });
      expect(snapshot.requests).toBe(1);

      expect(await redis.scriptFlush()).toBe("OK");
      stats.reset();
      const again = redis.createScript<string>(script.script);
      expect(await again.exec([], ["third"])).toBe("third");
      expect(stats.snapshot().commandsByName).toEqual({ evalsha: 1, eval: 1 });
      expect(stats.snapshot().requestsByRoute.pipeline).toBe(2);
    });
  });

  describe("pipelines and transactions", () => {
    it("returns per-command results and errors from a pipeline", async () => {
      const redis = upstash(server());
      const key = uniqueKey();
      const pipeline = redis.pipeline();
      pipeline.set(key, "text");
      pipeline.incr(key);
      pipeline.get(key);
      const results = await pipeline.exec({ keepErrors: true });
      expect(results[0]).toEqual({ result: "OK", error: undefined });
      expect(results[1]?.error).toMatch(/not an integer/);
      expect(results[2]).toEqual({ result: "text", error: undefined });

      const failing = redis.pipeline();
      failing.get(key);
      failing.incr(key);
      await expect(failing.exec()).rejects.toThrow(/Command 2 \[ incr \] failed/);
    });

    it("keeps 50 concurrent multi() calls atomic", async () => {
      const redis = upstash(server());
      const key = uniqueKey();
      const results = await Promise.all(
        Array.from({ length: 50 }, () => redis.multi().incr(key).incr(key).exec()),
      );
      for (const [first, second] of results) expect(second).toBe(first + 1);
      expect(results.flat().sort((a, b) => a - b)).toEqual(
        Array.from({ length: 100 }, (_, i) => i + 1),
      );
    });

    it("applies a multi() whose command fails at run time, reporting the error in place", async () => {
      const redis = upstash(server());
      const key = uniqueKey();
      const results = await redis
        .multi()
        .set(key, "x")
        .incr(key)
        .get(key)
        .exec({ keepErrors: true });
      expect(results.map((r) => r.error === undefined)).toEqual([true, false, true]);
      expect(results[2]?.result).toBe("x");
    });

    it("discards a transaction with an unknown command as a whole: one error, HTTP 400", async () => {
      const key = uniqueKey();
      const response = await rawRequest(server(), "/multi-exec", {
        body: [
          ["set", key, "1"],
          ["nosuchcommand", key],
        ],
      });
      expect(response.status).toBe(400);
      expect(response.json()).toEqual({ error: expect.stringMatching(/^EXECABORT/) });
      expect(await upstash(server()).get(key)).toBeNull();
    });
  });

  describe("auth and headers", () => {
    it("rejects a wrong token: 401 and an UpstashError mentioning WRONGPASS", async () => {
      const stats = server().stats;
      const before = stats.snapshot().responsesByStatus[401] ?? 0;
      const wrong = upstash(server(), { token: "not-the-token" });
      const failure = await wrong.get(uniqueKey()).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(errors.UpstashError);
      expect(String(failure)).toMatch(/WRONGPASS/);
      expect(stats.snapshot().responsesByStatus[401]).toBe(before + 1);

      const missing = await rawRequest(server(), "/", { body: ["ping"], auth: false });
      expect(missing.status).toBe(401);
      expect(missing.headers.get("content-type")).toBe("application/json");
      expect(missing.json()).toEqual({ error: "WRONGPASS invalid or missing auth token" });
    });

    it("accepts the token as a _token query parameter", async () => {
      const response = await rawRequest(server(), `/ping?_token=${server().token}`, {
        auth: false,
      });
      expect(response.json()).toEqual({ result: "PONG" });
    });

    it("returns an increasing upstash-sync-token on every response, errors included", async () => {
      const first = await rawRequest(server(), "/", { body: ["ping"] });
      const second = await rawRequest(server(), "/", { body: "not json" });
      const third = await rawRequest(server(), "/", { body: ["ping"], auth: false });
      const tokens = [first, second, third].map((r) => Number(r.headers.get("upstash-sync-token")));
      expect(tokens.every(Number.isFinite)).toBe(true);
      expect(tokens[1]).toBeGreaterThan(tokens[0]!);
      expect(tokens[2]).toBeGreaterThan(tokens[1]!);

      const redis = upstash(server());
      await redis.set(uniqueKey(), "v");
      expect(redis.readYourWritesSyncToken).toMatch(/^\d+$/);
    });
  });

  describe("responseEncoding: false", () => {
    it("works with plain-text responses", async () => {
      const redis = upstash(server(), { responseEncoding: false });
      const key = uniqueKey();
      await redis.set(key, "héllo 😀");
      expect(await redis.get(key)).toBe("héllo 😀");
      await redis.set(key, "OK");
      expect(await redis.get(key)).toBe("OK");
      expect(await redis.mget(key, uniqueKey())).toEqual(["OK", null]);
      const results = await redis.multi().set(key, "1").incr(key).exec();
      expect(results).toEqual(["OK", 2]);
    });
  });

  describe("single commands without auto-pipelining", () => {
    it("uses POST / and answers errors with HTTP 400", async () => {
      const redis = upstash(server(), { enableAutoPipelining: false });
      const key = uniqueKey();
      const stats = server().stats;
      const before = stats.snapshot().requestsByRoute.command;
      expect(await redis.set(key, "x")).toBe("OK");
      await expect(redis.incr(key)).rejects.toThrow(/not an integer/);
      expect(stats.snapshot().requestsByRoute.command).toBe(before + 2);
    });
  });
});

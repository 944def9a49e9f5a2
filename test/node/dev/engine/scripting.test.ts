import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Backend } from "../../../../dev/backend.js";
import { createEmbeddedBackend } from "../../../../dev/engine/index.js";
import { FakeClock, type Plain, plain, startEngine } from "./helpers.js";

const sha1 = (text: string): string => createHash("sha1").update(text).digest("hex");

describe("embedded engine: scripting", () => {
  let backend: Backend;
  let run: (...command: (string | Uint8Array)[]) => Promise<Plain>;
  let clock: FakeClock;
  const evalScript = (script: string, keys: string[] = [], args: (string | Uint8Array)[] = []) =>
    run("EVAL", script, String(keys.length), ...keys, ...args);

  beforeEach(async () => {
    clock = new FakeClock();
    ({ backend, run } = await startEngine(clock));
  });
  afterEach(async () => backend.close());

  describe("KEYS, ARGV and redis.call / redis.pcall", () => {
    it("passes keys and args as strings", async () => {
      expect(
        await evalScript(
          "return {KEYS[1], KEYS[2], ARGV[1], type(ARGV[2]), #ARGV}",
          ["k1", "k2"],
          ["a", "2"],
        ),
      ).toEqual(["k1", "k2", "a", "string", 2n]);
    });

    it("redis.call runs commands and converts replies to Lua values", async () => {
      await run("SET", "s", "v");
      await run("RPUSH", "l", "a", "b");
      const script = `
        local out = {}
        out[1] = redis.call('get', 's')                 -- bulk -> string
        out[2] = tostring(redis.call('get', 'missing'))  -- nil -> false
        out[3] = redis.call('incr', 'n')                 -- integer -> number
        out[4] = redis.call('set', 'x', 'y').ok          -- status -> {ok=...}
        out[5] = #redis.call('lrange', 'l', 0, -1)       -- array -> table
        out[6] = redis.pcall('incr', 's').err            -- error -> {err=...} (pcall only)
        return out`;
      expect(await evalScript(script)).toEqual([
        "v",
        "false",
        1n,
        "OK",
        2n,
        "ERR value is not an integer or out of range",
      ]);
    });

    it("redis.call aborts the script with the command's own error text", async () => {
      await run("HSET", "h", "f", "v");
      const script = "redis.call('set', 'before', '1')\nreturn redis.call('incr', KEYS[1])";
      expect(await evalScript(script, ["h"])).toEqual({
        error: `WRONGTYPE Operation against a key holding the wrong kind of value script: ${sha1(script)}, on @user_script:2.`,
      });
      expect(await run("GET", "before")).toBe("1"); // no rollback, as in Redis
    });

    it("numbers passed to redis.call are formatted like Redis (integers plain, others %.17g)", async () => {
      await evalScript(
        "redis.call('set', 'a', 10 / 2) redis.call('set', 'b', 0.1) redis.call('set', 'c', 2^60)",
      );
      expect(await run("MGET", "a", "b", "c")).toEqual([
        "5",
        "0.10000000000000001",
        "1.152921504606847e+18",
      ]);
      expect(await evalScript("return redis.call('set', 'a', {})")).toMatchObject({
        error: expect.stringMatching(
          /^ERR Lua redis lib command arguments must be strings or integers/,
        ),
      });
    });

    it("refuses script-forbidden and unknown commands", async () => {
      expect(await evalScript("return redis.pcall('eval', 'return 1', 0)")).toEqual({
        error: "ERR This Redis command is not allowed from script",
      });
      expect(await evalScript("return redis.pcall('nope')")).toEqual({
        error: "ERR Unknown Redis command called from script",
      });
      expect(await evalScript("return redis.pcall('get')")).toEqual({
        error: "ERR Wrong number of args calling Redis command from script",
      });
    });
  });

  describe("reply conversion (Lua -> Redis)", () => {
    const cases: [string, Plain][] = [
      ["return 3.99", 3n],
      ["return -2.5", -2n],
      ["return 42", 42n],
      ["return 'text'", "text"],
      ["return true", 1n],
      ["return false", null],
      ["return nil", null],
      ["return", null],
      ["return {1, 'two', {3, nil, 5}, nil, 6}", [1n, "two", [3n]]],
      ["return {1, true, false, 4}", [1n, 1n, null, 4n]],
      ["return {ok = 'FINE'}", { status: "FINE" }],
      ["return {err = 'CODE my message'}", { error: "CODE my message" }],
      ["return redis.status_reply('DONE')", { status: "DONE" }],
      ["return redis.error_reply('MYERR bad')", { error: "MYERR bad" }],
      ["return redis.error_reply('no code')", { error: "no code" }],
      ["return redis.error_reply('nocode')", { error: "ERR nocode" }],
      [
        "return {{ok = 'nested'}, {err = 'E nested'}}",
        [{ status: "nested" }, { error: "E nested" }],
      ],
      ["return {foo = 'bar'}", []],
      ["return 2^63", -9223372036854775808n],
      ["return math.maxinteger", 9223372036854775807n],
    ];
    for (const [script, expected] of cases) {
      it(script, async () => {
        expect(await evalScript(script)).toEqual(expected);
      });
    }
  });

  describe("runtime errors", () => {
    it("formats script errors like Redis 7", async () => {
      const script = "local a = 1\nerror('boom')";
      expect(await evalScript(script)).toEqual({
        error: `ERR user_script:2: boom script: ${sha1(script)}, on @user_script:2.`,
      });
      const custom = "error({err = 'CUSTOM failure'})";
      expect(await evalScript(custom)).toEqual({
        error: `CUSTOM failure script: ${sha1(custom)}, on @user_script:1.`,
      });
    });

    it("reports compile errors", async () => {
      expect(await evalScript("return +")).toEqual({
        error:
          "ERR Error compiling script (new function): user_script:1: unexpected symbol near '+'",
      });
    });

    it("pcall turns redis.call errors into their message (Redis 7 behaviour)", async () => {
      await run("SET", "s", "v");
      expect(
        await evalScript("local ok, e = pcall(redis.call, 'incr', 's'); return {tostring(ok), e}"),
      ).toEqual(["false", "ERR value is not an integer or out of range"]);
    });
  });

  describe("time inside scripts", () => {
    it("TIME is frozen for the duration of one script", async () => {
      let ticks = 0;
      const moving = await createEmbeddedBackend({ now: () => 1_700_000_000_000 + 7 * ticks++ });
      try {
        const reply = plain(
          await moving.command([
            "EVAL",
            "local a = redis.call('time') local b = redis.call('time') return {a[1], a[2], b[1], b[2]}",
            "0",
          ]),
        ) as string[];
        expect(reply[0]).toBe(reply[2]);
        expect(reply[1]).toBe(reply[3]);
        const later = plain(await moving.command(["EVAL", "return redis.call('time')[2]", "0"]));
        expect(later).not.toBe(reply[1]);
      } finally {
        await moving.close();
      }
    });

    it("expiry is evaluated at the script's start time", async () => {
      let now = 1_000_000;
      const moving = await createEmbeddedBackend({ now: () => now++ });
      try {
        await moving.command(["SET", "k", "v", "PX", "3"]);
        const reply = plain(
          await moving.command([
            "EVAL",
            "local r = {} for i = 1, 10 do r[i] = redis.call('get', 'k') end return r",
            "0",
          ]),
        );
        expect(reply).toEqual(Array(10).fill("v"));
      } finally {
        await moving.close();
      }
    });

    it("millisecond arithmetic on TIME is exact", async () => {
      clock.ms = 1_700_000_000_123.9;
      const script =
        "local t = redis.call('time') return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)";
      expect(await evalScript(script)).toBe(1_700_000_000_123n);
      expect(await evalScript(`${script.replace("return", "return tostring(")})`)).toBe(
        "1700000000123",
      );
    });
  });

  describe("shebang and read-only scripts", () => {
    it("accepts Redis's flags and rejects others (like allow-key-locking)", async () => {
      expect(
        await evalScript(
          "#!lua flags=no-writes,allow-oom,allow-stale,no-cluster,allow-cross-slot-keys\nreturn 1",
        ),
      ).toBe(1n);
      expect(await evalScript("#!lua flags=allow-key-locking\nreturn 1")).toEqual({
        error: "ERR Unexpected flag in script shebang: allow-key-locking",
      });
      expect(await evalScript("#!lua\nreturn 2")).toBe(2n);
    });

    it("keeps line numbers after the shebang", async () => {
      const script = "#!lua\nerror('x')";
      expect(await evalScript(script)).toEqual({
        error: `ERR user_script:2: x script: ${sha1(script)}, on @user_script:2.`,
      });
    });

    it("no-writes and EVAL_RO refuse write commands", async () => {
      const noWrites = "#!lua flags=no-writes\nreturn redis.pcall('set', 'k', 'v')";
      const refused = { error: "ERR Write commands are not allowed from read-only scripts." };
      expect(await evalScript(noWrites)).toEqual(refused);
      expect(await run("EVAL_RO", "return redis.pcall('set', 'k', 'v')", "0")).toEqual(refused);
      expect(await run("EVAL_RO", "return redis.call('get', 'k')", "0")).toBeNull();
      expect(await run("EVAL_RO", "#!lua\nreturn 1", "0")).toEqual({
        error: "ERR Can not execute a script with write flag using *_ro command.",
      });
    });
  });

  describe("script cache", () => {
    it("SCRIPT LOAD / EVALSHA / SCRIPT EXISTS / SCRIPT FLUSH / NOSCRIPT", async () => {
      const body = "return ARGV[1] .. '!'";
      expect(await run("SCRIPT", "LOAD", body)).toBe(sha1(body));
      expect(await run("EVALSHA", sha1(body), "0", "hi")).toBe("hi!");
      expect(await run("EVALSHA", sha1(body).toUpperCase(), "0", "x")).toBe("x!");
      expect(await run("SCRIPT", "EXISTS", sha1(body), sha1("other"))).toEqual([1n, 0n]);
      expect(await run("SCRIPT", "FLUSH")).toEqual({ status: "OK" });
      expect(await run("EVALSHA", sha1(body), "0")).toEqual({
        error: "NOSCRIPT No matching script. Please use EVAL.",
      });
      expect(await run("EVALSHA_RO", "short", "0")).toEqual({
        error: "NOSCRIPT No matching script. Please use EVAL.",
      });
    });

    it("EVAL caches the script for EVALSHA", async () => {
      await evalScript("return 'cached'");
      expect(await run("EVALSHA", sha1("return 'cached'"), "0")).toBe("cached");
    });

    it("validates numkeys", async () => {
      expect(await run("EVAL", "return 1", "2", "a")).toEqual({
        error: "ERR Number of keys can't be greater than number of args",
      });
      expect(await run("EVAL", "return 1", "-1")).toEqual({
        error: "ERR Number of keys can't be negative",
      });
    });
  });

  describe("sandbox", () => {
    it("does not let globals leak between scripts", async () => {
      const attempts = [
        "leaked = 1",
        "rawset(_G, 'leaked', 1)",
        "_G.leaked = 1",
        "string.leaked = 1",
        "redis.call = function() return 'hijacked' end",
        "tostring = nil",
        "setmetatable(_G, {})",
        "loadstring('leaked = 1')()",
        "function leaked() end",
      ];
      for (const attempt of attempts) {
        expect(await evalScript(attempt), attempt).toMatchObject({
          error: expect.stringContaining("ERR"),
        });
      }
      expect(await evalScript("return rawget(_G, 'leaked') == nil and string.leaked == nil")).toBe(
        1n,
      );
      expect(await evalScript("return redis.call('ping').ok .. tostring(1)")).toBe("PONG1");
      expect(await evalScript("return leaked")).toMatchObject({
        error: expect.stringContaining(
          "Script attempted to access nonexistent global variable 'leaked'",
        ),
      });
    });

    it("locals, tables and KEYS do not carry over", async () => {
      await evalScript("KEYS[2] = 'added' local t = {} t.x = 1", ["a"]);
      expect(await evalScript("return #KEYS", ["b"])).toBe(1n);
    });

    it("hides os, io, require, loadfile, dofile, debug", async () => {
      for (const name of [
        "os",
        "io",
        "require",
        "loadfile",
        "dofile",
        "debug",
        "package",
        "print",
      ]) {
        expect(await evalScript(`return ${name}`), name).toMatchObject({
          error: expect.stringContaining(`nonexistent global variable '${name}'`),
        });
      }
    });
  });

  describe("binary-safe strings", () => {
    it("round-trips arbitrary bytes through ARGV, redis.call and the return value", async () => {
      const bytes = new Uint8Array(256).map((_, i) => i);
      const reply = await backend.command([
        "EVAL",
        "redis.call('set', KEYS[1], ARGV[1]) return {#ARGV[1], redis.call('get', KEYS[1]), string.byte(ARGV[1], 256)}",
        "1",
        new Uint8Array([0xc3, 0x28]),
        bytes,
      ]);
      expect(reply.type).toBe("array");
      const items = reply.type === "array" ? (reply.value ?? []) : [];
      expect(plain(items[0]!)).toBe(256n);
      expect(items[1]).toEqual({ type: "bulk", value: bytes });
      expect(plain(items[2]!)).toBe(255n);
      const stored = await backend.command(["GET", new Uint8Array([0xc3, 0x28])]);
      expect(stored).toEqual({ type: "bulk", value: bytes });
    });

    it("returns invalid UTF-8 produced inside Lua intact", async () => {
      const reply = await backend.command(["EVAL", "return string.char(255, 0, 128, 65)", "0"]);
      expect(reply).toEqual({ type: "bulk", value: new Uint8Array([255, 0, 128, 65]) });
    });
  });

  describe("runaway scripts", () => {
    it("kills a script that runs past the time limit, even inside pcall", async () => {
      const limited = await createEmbeddedBackend({ scriptTimeLimitMs: 50 });
      try {
        for (const script of [
          "while true do end",
          "while true do pcall(function() while true do end end) end",
          "local co = coroutine.wrap(function() while true do end end) co()",
        ]) {
          const reply = plain(await limited.command(["EVAL", script, "0"]));
          expect(reply, script).toMatchObject({
            error: expect.stringMatching(/^BUSY Script killed/),
          });
        }
        expect(plain(await limited.command(["EVAL", "return 'alive'", "0"]))).toBe("alive");
      } finally {
        await limited.close();
      }
    });
  });
});

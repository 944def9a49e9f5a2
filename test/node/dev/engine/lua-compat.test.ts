/** Lua 5.4 (wasmoon) adjusted to behave like Redis's Lua 5.1 where portable scripts can tell. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Backend } from "../../../../dev/backend.js";
import { type Plain, startEngine } from "./helpers.js";

describe("embedded engine: Lua 5.1 compatibility", () => {
  let backend: Backend;
  let run: (...command: (string | Uint8Array)[]) => Promise<Plain>;
  const lua = (script: string) => run("EVAL", script, "0");

  beforeAll(async () => {
    ({ backend, run } = await startEngine());
  });
  afterAll(async () => backend.close());

  it("tostring prints integral floats without .0 and uses %.14g", async () => {
    expect(await lua("return tostring(10/2)")).toBe("5");
    expect(await lua("return tostring(0.1)")).toBe("0.1");
    expect(await lua("return tostring(1/3)")).toBe("0.33333333333333");
    expect(await lua("return tostring(1e15)")).toBe("1e+15");
    expect(await lua("return tostring(-0.0)")).toBe("-0");
    expect(await lua("return tostring(math.huge)")).toBe("inf");
  });

  it("string.format truncates floats for integer conversions and prints %s like tostring", async () => {
    expect(await lua("return string.format('%d|%x|%s|%.2f', 2.9, 255.0, 3.0, 1/3)")).toBe(
      "2|ff|3|0.33",
    );
    expect(await lua("return ('%d'):format(-7.9)")).toBe("-7");
  });

  it("provides the Lua 5.1 names Redis exposes", async () => {
    expect(await lua("return math.pow(2, 10)")).toBe(1024n);
    expect(await lua("return unpack({7, 8})")).toBe(7n);
    expect(await lua("return table.getn({1, 2, 3})")).toBe(3n);
    expect(await lua("return loadstring('return 1 + 1')()")).toBe(2n);
    expect(await lua("return math.mod(7, 3) + math.log10(100) + math.atan2(0, 1)")).toBe(3n);
    expect(
      await lua("local s = '' for w in string.gfind('a b', '%a') do s = s .. w end return s"),
    ).toBe("ab");
  });

  it("integer-valued math stays exact", async () => {
    expect(await lua("return math.floor(1700000000123.9)")).toBe(1700000000123n);
    expect(
      await lua("return tonumber('1700000000') * 1000 + math.floor(tonumber('123456') / 1000)"),
    ).toBe(1700000000123n);
  });

  it("words runtime errors like Lua 5.1", async () => {
    expect(await lua("local t = nil return t.x")).toMatchObject({
      error: expect.stringContaining("attempt to index local 't' (a nil value)"),
    });
    expect(await lua("local n return n + 1")).toMatchObject({
      error: expect.stringContaining("attempt to perform arithmetic on local 'n' (a nil value)"),
    });
  });

  it("error() adds the position to numeric messages", async () => {
    expect(await lua("error(12)")).toMatchObject({
      error: expect.stringMatching(/^ERR user_script:1: 12 /),
    });
  });

  it("cjson encodes and decodes like lua-cjson", async () => {
    expect(await lua("return cjson.encode({1, 2, {a = 1}})")).toBe('[1,2,{"a":1}]');
    expect(await lua("return cjson.encode({a = 'x/y', b = {}})")).toMatch(
      /^\{("a":"x\\\/y","b":\{\}|"b":\{\},"a":"x\\\/y")\}$/,
    );
    expect(await lua("return cjson.encode(0.1)")).toBe("0.1");
    expect(await lua('return cjson.decode(\'{"a":[1,2,{"b":null}]}\').a[2]')).toBe(2n);
    expect(await lua("return cjson.decode('[null]')[1] == cjson.null")).toBe(1n);
    expect(await lua("return cjson.decode('\"\\\\u00e9\\\\ud83d\\\\ude00\"')")).toBe(
      "\u00c3\u00a9\u00f0\u009f\u0098\u0080",
    );
  });

  it("bit library works on 32-bit signed values", async () => {
    expect(await lua("return bit.band(0xff, 0x0f)")).toBe(15n);
    expect(await lua("return bit.tobit(0xffffffff)")).toBe(-1n);
    expect(await lua("return bit.lshift(1, 31)")).toBe(-2147483648n);
    expect(await lua("return bit.tohex(-1)")).toBe("ffffffff");
  });

  it("redis helpers", async () => {
    expect(await lua("return redis.sha1hex('abc')")).toBe(
      "a9993e364706816aba3e25717850c26c9cd0d89d",
    );
    expect(await lua("return redis.REDIS_VERSION")).toBe("7.0.15");
    expect(await lua("redis.log(redis.LOG_NOTICE, 'hello') redis.setresp(2) return 1")).toBe(1n);
    expect(await lua("return redis.setresp(3)")).toMatchObject({
      error: expect.stringContaining("RESP3"),
    });
  });
});

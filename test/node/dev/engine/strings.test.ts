import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Backend } from "../../../../dev/backend.js";
import { FakeClock, type Plain, startEngine } from "./helpers.js";

const OK = { status: "OK" };
const WRONGTYPE = { error: "WRONGTYPE Operation against a key holding the wrong kind of value" };

describe("embedded engine: strings", () => {
  let backend: Backend;
  let run: (...command: (string | Uint8Array)[]) => Promise<Plain>;
  let clock: FakeClock;

  beforeEach(async () => {
    clock = new FakeClock();
    ({ backend, run } = await startEngine(clock));
  });
  afterEach(async () => backend.close());

  it("gets and sets, case-insensitively", async () => {
    expect(await run("SET", "k", "v")).toEqual(OK);
    expect(await run("get", "k")).toBe("v");
    expect(await run("GeT", "missing")).toBeNull();
  });

  it("SET NX / XX", async () => {
    expect(await run("SET", "k", "1", "NX")).toEqual(OK);
    expect(await run("SET", "k", "2", "NX")).toBeNull();
    expect(await run("SET", "k", "3", "XX")).toEqual(OK);
    expect(await run("SET", "other", "3", "XX")).toBeNull();
    expect(await run("GET", "k")).toBe("3");
    expect(await run("SET", "k", "4", "NX", "XX")).toEqual({ error: "ERR syntax error" });
  });

  it("SET EX / PX expire on the injected clock", async () => {
    await run("SET", "ex", "v", "EX", "10");
    await run("SET", "px", "v", "PX", "1500");
    expect(await run("PTTL", "ex")).toBe(10_000n);
    expect(await run("TTL", "px")).toBe(2n); // rounded like Redis: (1500 + 500) / 1000
    clock.advance(1500);
    expect(await run("GET", "px")).toBe("v"); // still alive exactly at the deadline
    clock.advance(1);
    expect(await run("GET", "px")).toBeNull();
    clock.advance(8499);
    expect(await run("GET", "ex")).toBe("v");
    clock.advance(1);
    expect(await run("GET", "ex")).toBeNull();
  });

  it("SET EXAT / PXAT take absolute times", async () => {
    await run("SET", "a", "v", "PXAT", String(clock.ms + 100));
    await run("SET", "b", "v", "EXAT", String(Math.floor(clock.ms / 1000) + 5));
    expect(await run("PTTL", "a")).toBe(100n);
    expect(await run("PEXPIRETIME", "a")).toBe(BigInt(clock.ms + 100));
    await run("SET", "past", "v", "PXAT", String(clock.ms - 1));
    expect(await run("GET", "past")).toBeNull();
  });

  it("SET KEEPTTL keeps, plain SET clears the expiry", async () => {
    await run("SET", "k", "v", "PX", "5000");
    await run("SET", "k", "v2", "KEEPTTL");
    expect(await run("PTTL", "k")).toBe(5000n);
    await run("SET", "k", "v3");
    expect(await run("PTTL", "k")).toBe(-1n);
    expect(await run("SET", "k", "v", "KEEPTTL", "PX", "1")).toEqual({ error: "ERR syntax error" });
  });

  it("SET GET returns the old value and refuses non-strings", async () => {
    expect(await run("SET", "k", "1", "GET")).toBeNull();
    expect(await run("SET", "k", "2", "GET")).toBe("1");
    expect(await run("SET", "k", "3", "NX", "GET")).toBe("2");
    expect(await run("GET", "k")).toBe("2");
    await run("HSET", "h", "f", "v");
    expect(await run("SET", "h", "x", "GET")).toEqual(WRONGTYPE);
    expect(await run("TYPE", "h")).toEqual({ status: "hash" });
  });

  it("validates SET expire values", async () => {
    expect(await run("SET", "k", "v", "EX", "0")).toEqual({
      error: "ERR invalid expire time in 'set' command",
    });
    expect(await run("SET", "k", "v", "PX", "-1")).toEqual({
      error: "ERR invalid expire time in 'set' command",
    });
    expect(await run("SET", "k", "v", "PX", "1.5")).toEqual({
      error: "ERR value is not an integer or out of range",
    });
    expect(await run("SET", "k", "v", "EX")).toEqual({ error: "ERR syntax error" });
  });

  it("INCR family uses 64-bit integers and detects overflow", async () => {
    expect(await run("INCR", "n")).toBe(1n);
    expect(await run("INCRBY", "n", "9007199254740992")).toBe(9007199254740993n);
    expect(await run("GET", "n")).toBe("9007199254740993");
    await run("SET", "n", "9223372036854775806");
    expect(await run("INCR", "n")).toBe(9223372036854775807n);
    expect(await run("INCR", "n")).toEqual({ error: "ERR increment or decrement would overflow" });
    await run("SET", "n", "-9223372036854775808");
    expect(await run("DECR", "n")).toEqual({ error: "ERR increment or decrement would overflow" });
    expect(await run("DECRBY", "n", "-9223372036854775808")).toEqual({
      error: "ERR decrement would overflow",
    });
    expect(await run("INCRBY", "n", "9223372036854775808")).toEqual({
      error: "ERR value is not an integer or out of range",
    });
  });

  it("INCR rejects values that are not canonical integers", async () => {
    for (const bad of ["abc", " 1", "+1", "01", "-0", "1.0", ""]) {
      await run("SET", "n", bad);
      expect(await run("INCR", "n"), bad).toEqual({
        error: "ERR value is not an integer or out of range",
      });
    }
  });

  it("INCR keeps the TTL", async () => {
    await run("SET", "n", "1", "PX", "1000");
    await run("INCR", "n");
    expect(await run("PTTL", "n")).toBe(1000n);
  });

  it("INCRBYFLOAT prints like Redis's long double arithmetic", async () => {
    expect(await run("INCRBYFLOAT", "f", "10.5")).toBe("10.5");
    expect(await run("INCRBYFLOAT", "f", "0.1")).toBe("10.6");
    expect(await run("INCRBYFLOAT", "f", "-10.6")).toBe("0");
    expect(await run("INCRBYFLOAT", "g", "5005.6")).toBe("5005.60000000000000009");
    expect(await run("INCRBYFLOAT", "f", "nan")).toEqual({
      error: "ERR value is not a valid float",
    });
    expect(await run("INCRBYFLOAT", "f", "inf")).toEqual({
      error: "ERR increment would produce NaN or Infinity",
    });
  });

  it("APPEND, STRLEN, GETDEL, GETSET, SETNX, MSET, MGET", async () => {
    expect(await run("APPEND", "s", "ab")).toBe(2n);
    expect(await run("APPEND", "s", "cd")).toBe(4n);
    expect(await run("STRLEN", "s")).toBe(4n);
    expect(await run("GETSET", "s", "x")).toBe("abcd");
    expect(await run("GETDEL", "s")).toBe("x");
    expect(await run("EXISTS", "s")).toBe(0n);
    expect(await run("SETNX", "s", "1")).toBe(1n);
    expect(await run("SETNX", "s", "2")).toBe(0n);
    expect(await run("MSET", "a", "1", "b", "2")).toEqual(OK);
    await run("LPUSH", "l", "x");
    expect(await run("MGET", "a", "b", "missing", "l")).toEqual(["1", "2", null, null]);
    expect(await run("MSET", "a", "1", "b")).toEqual({
      error: "ERR wrong number of arguments for 'mset' command",
    });
  });

  it("WRONGTYPE for string commands on other types", async () => {
    await run("RPUSH", "l", "x");
    expect(await run("GET", "l")).toEqual(WRONGTYPE);
    expect(await run("INCR", "l")).toEqual(WRONGTYPE);
    expect(await run("APPEND", "l", "x")).toEqual(WRONGTYPE);
    expect(await run("STRLEN", "l")).toEqual(WRONGTYPE);
  });

  it("is binary-safe for keys and values", async () => {
    const key = new Uint8Array([0xff, 0x00, 0xfe, 0x80]);
    const value = new Uint8Array([0x00, 0xc3, 0x28, 0xff, 0x0a, 0x0d]);
    expect(await run("SET", key, value)).toEqual(OK);
    const reply = await backend.command(["GET", key]);
    expect(reply.type).toBe("bulk");
    expect(reply.type === "bulk" && [...(reply.value ?? [])]).toEqual([...value]);
    expect(await run("STRLEN", key)).toBe(6n);
    expect(await run("EXISTS", "\u00ff")).toBe(0n); // UTF-8 text "ÿ" is two other bytes
    expect(await run("SET", "ключ", "значение")).toEqual(OK);
    const text = await backend.command(["GET", "ключ"]);
    expect(text.type === "bulk" && new TextDecoder().decode(text.value ?? new Uint8Array())).toBe(
      "значение",
    );
    expect(await run("STRLEN", "ключ")).toBe(16n);
  });

  it("reports unknown commands and wrong arity with Redis's text", async () => {
    expect(await run("NOPE", "a", "b")).toEqual({
      error: "ERR unknown command 'NOPE', with args beginning with: 'a' 'b' ",
    });
    expect(await run("GET")).toEqual({ error: "ERR wrong number of arguments for 'get' command" });
    expect(await run("GET", "a", "b")).toEqual({
      error: "ERR wrong number of arguments for 'get' command",
    });
  });
});

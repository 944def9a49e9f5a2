import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Backend } from "../../../../dev/backend.js";
import { type Plain, startEngine } from "./helpers.js";

const OK = { status: "OK" };
const WRONGTYPE = { error: "WRONGTYPE Operation against a key holding the wrong kind of value" };

describe("embedded engine: hashes, lists, sets, sorted sets", () => {
  let backend: Backend;
  let run: (...command: (string | Uint8Array)[]) => Promise<Plain>;

  beforeEach(async () => {
    ({ backend, run } = await startEngine());
  });
  afterEach(async () => backend.close());

  describe("hashes", () => {
    it("HSET with several fields, HGET/HMGET/HGETALL in insertion order", async () => {
      expect(await run("HSET", "h", "a", "1", "b", "2")).toBe(2n);
      expect(await run("HSET", "h", "a", "3", "c", "4")).toBe(1n);
      expect(await run("HGET", "h", "a")).toBe("3");
      expect(await run("HMGET", "h", "a", "zz", "c")).toEqual(["3", null, "4"]);
      expect(await run("HGETALL", "h")).toEqual(["a", "3", "b", "2", "c", "4"]);
      expect(await run("HKEYS", "h")).toEqual(["a", "b", "c"]);
      expect(await run("HVALS", "h")).toEqual(["3", "2", "4"]);
      expect(await run("HLEN", "h")).toBe(3n);
      expect(await run("HMSET", "h", "d", "5")).toEqual(OK);
    });

    it("HSETNX, HEXISTS, HDEL removes the key when the last field goes", async () => {
      expect(await run("HSETNX", "h", "f", "1")).toBe(1n);
      expect(await run("HSETNX", "h", "f", "2")).toBe(0n);
      expect(await run("HEXISTS", "h", "f")).toBe(1n);
      expect(await run("HDEL", "h", "f", "nope")).toBe(1n);
      expect(await run("EXISTS", "h")).toBe(0n);
      expect(await run("HGETALL", "h")).toEqual([]);
    });

    it("HINCRBY (64-bit) and HINCRBYFLOAT", async () => {
      expect(await run("HINCRBY", "h", "n", "5")).toBe(5n);
      expect(await run("HINCRBY", "h", "n", "-9223372036854775808")).toBe(-9223372036854775803n);
      expect(await run("HINCRBY", "h", "n", "-6")).toEqual({
        error: "ERR increment or decrement would overflow",
      });
      await run("HSET", "h", "s", "x");
      expect(await run("HINCRBY", "h", "s", "1")).toEqual({
        error: "ERR hash value is not an integer",
      });
      expect(await run("HINCRBYFLOAT", "h", "f", "1.5")).toBe("1.5");
      expect(await run("HINCRBYFLOAT", "h", "f", "1")).toBe("2.5");
      expect(await run("HINCRBYFLOAT", "h", "s", "1")).toEqual({
        error: "ERR hash value is not a float",
      });
    });

    it("WRONGTYPE", async () => {
      await run("SET", "s", "v");
      expect(await run("HGET", "s", "f")).toEqual(WRONGTYPE);
      expect(await run("HSET", "s", "f", "v")).toEqual(WRONGTYPE);
    });
  });

  describe("lists", () => {
    it("push, range, index, length", async () => {
      expect(await run("RPUSH", "l", "a", "b")).toBe(2n);
      expect(await run("LPUSH", "l", "y", "z")).toBe(4n);
      expect(await run("LRANGE", "l", "0", "-1")).toEqual(["z", "y", "a", "b"]);
      expect(await run("LRANGE", "l", "1", "2")).toEqual(["y", "a"]);
      expect(await run("LRANGE", "l", "5", "10")).toEqual([]);
      expect(await run("LINDEX", "l", "-1")).toBe("b");
      expect(await run("LINDEX", "l", "9")).toBeNull();
      expect(await run("LLEN", "l")).toBe(4n);
    });

    it("LPOP/RPOP with and without count; empty lists disappear", async () => {
      await run("RPUSH", "l", "a", "b", "c", "d");
      expect(await run("LPOP", "l")).toBe("a");
      expect(await run("RPOP", "l", "2")).toEqual(["d", "c"]);
      expect(await run("LPOP", "l", "5")).toEqual(["b"]);
      expect(await run("EXISTS", "l")).toBe(0n);
      expect(await run("LPOP", "l")).toBeNull();
      expect(await run("LPOP", "l", "1")).toEqual({ nilArray: true });
    });

    it("LREM and LPOS", async () => {
      await run("RPUSH", "l", "a", "b", "a", "c", "a");
      expect(await run("LPOS", "l", "a")).toBe(0n);
      expect(await run("LPOS", "l", "a", "RANK", "-1")).toBe(4n);
      expect(await run("LPOS", "l", "a", "COUNT", "0")).toEqual([0n, 2n, 4n]);
      expect(await run("LPOS", "l", "x")).toBeNull();
      expect(await run("LREM", "l", "-1", "a")).toBe(1n);
      expect(await run("LREM", "l", "0", "a")).toBe(2n);
      expect(await run("LRANGE", "l", "0", "-1")).toEqual(["b", "c"]);
    });
  });

  describe("sets", () => {
    it("SADD, SREM, SISMEMBER, SCARD, SMEMBERS", async () => {
      expect(await run("SADD", "s", "b", "a", "b")).toBe(2n);
      expect(await run("SISMEMBER", "s", "a")).toBe(1n);
      expect(await run("SISMEMBER", "s", "z")).toBe(0n);
      expect(await run("SCARD", "s")).toBe(2n);
      expect([...((await run("SMEMBERS", "s")) as string[])].sort()).toEqual(["a", "b"]);
      expect(await run("SREM", "s", "a", "b", "c")).toBe(2n);
      expect(await run("EXISTS", "s")).toBe(0n);
    });

    it("integer-only sets come back sorted, like Redis intsets", async () => {
      await run("SADD", "s", "10", "-3", "2");
      expect(await run("SMEMBERS", "s")).toEqual(["-3", "2", "10"]);
    });
  });

  describe("sorted sets", () => {
    it("ZADD, ZSCORE formatting, ZRANK, ZCARD", async () => {
      expect(await run("ZADD", "z", "1", "a", "2.5", "b", "0.1", "c")).toBe(3n);
      expect(await run("ZSCORE", "z", "b")).toBe("2.5");
      expect(await run("ZSCORE", "z", "c")).toBe("0.10000000000000001");
      expect(await run("ZADD", "z", "+inf", "top")).toBe(1n);
      expect(await run("ZSCORE", "z", "top")).toBe("inf");
      expect(await run("ZRANK", "z", "a")).toBe(1n);
      expect(await run("ZRANK", "z", "nope")).toBeNull();
      expect(await run("ZCARD", "z")).toBe(4n);
    });

    it("ZADD flags NX/XX/GT/LT/CH/INCR", async () => {
      await run("ZADD", "z", "5", "m");
      expect(await run("ZADD", "z", "NX", "1", "m")).toBe(0n);
      expect(await run("ZADD", "z", "XX", "CH", "6", "m")).toBe(1n);
      expect(await run("ZADD", "z", "GT", "CH", "3", "m")).toBe(0n);
      expect(await run("ZADD", "z", "LT", "CH", "3", "m")).toBe(1n);
      expect(await run("ZADD", "z", "INCR", "2", "m")).toBe("5");
      expect(await run("ZADD", "z", "NX", "INCR", "2", "m")).toBeNull();
      expect(await run("ZINCRBY", "z", "-1.5", "m")).toBe("3.5");
      expect(await run("ZADD", "z", "NX", "XX", "1", "m")).toEqual({
        error: "ERR XX and NX options at the same time are not compatible",
      });
      expect(await run("ZADD", "z", "x", "m")).toEqual({ error: "ERR value is not a valid float" });
    });

    it("ZRANGE by index, by score, reversed, with scores and LIMIT", async () => {
      await run("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d");
      expect(await run("ZRANGE", "z", "0", "1", "WITHSCORES")).toEqual(["a", "1", "b", "2"]);
      expect(await run("ZRANGE", "z", "0", "-1", "REV")).toEqual(["d", "c", "b", "a"]);
      expect(await run("ZRANGE", "z", "(1", "3", "BYSCORE")).toEqual(["b", "c"]);
      expect(await run("ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "1", "2")).toEqual(
        ["c", "b"],
      );
      expect(await run("ZRANGEBYSCORE", "z", "-inf", "2", "WITHSCORES")).toEqual([
        "a",
        "1",
        "b",
        "2",
      ]);
      expect(await run("ZCOUNT", "z", "2", "(4")).toBe(2n);
      expect(await run("ZREMRANGEBYSCORE", "z", "-inf", "2")).toBe(2n);
      expect(await run("ZRANGE", "z", "0", "-1")).toEqual(["c", "d"]);
      expect(await run("ZREM", "z", "c", "d")).toBe(2n);
      expect(await run("EXISTS", "z")).toBe(0n);
    });

    it("orders equal scores by member bytes", async () => {
      await run("ZADD", "z", "1", "b", "1", "a", "1", "B");
      expect(await run("ZRANGE", "z", "0", "-1")).toEqual(["B", "a", "b"]);
    });
  });
});

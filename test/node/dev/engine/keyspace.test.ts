import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Backend } from "../../../../dev/backend.js";
import { FakeClock, type Plain, startEngine } from "./helpers.js";

const OK = { status: "OK" };

describe("embedded engine: keyspace and expiry", () => {
  let backend: Backend;
  let run: (...command: (string | Uint8Array)[]) => Promise<Plain>;
  let clock: FakeClock;

  beforeEach(async () => {
    clock = new FakeClock();
    ({ backend, run } = await startEngine(clock));
  });
  afterEach(async () => backend.close());

  it("DEL, UNLINK, EXISTS count keys (EXISTS counts repeats)", async () => {
    await run("MSET", "a", "1", "b", "2", "c", "3");
    expect(await run("EXISTS", "a", "a", "b", "zz")).toBe(3n);
    expect(await run("DEL", "a", "zz")).toBe(1n);
    expect(await run("UNLINK", "b", "c")).toBe(2n);
    expect(await run("DBSIZE")).toBe(0n);
  });

  it("TYPE names every value type", async () => {
    await run("SET", "s", "v");
    await run("HSET", "h", "f", "v");
    await run("RPUSH", "l", "v");
    await run("SADD", "set", "v");
    await run("ZADD", "z", "1", "v");
    const types = [];
    for (const key of ["s", "h", "l", "set", "z", "none"]) types.push(await run("TYPE", key));
    expect(types).toEqual(
      ["string", "hash", "list", "set", "zset", "none"].map((status) => ({ status })),
    );
  });

  it("EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT and TTL / PTTL", async () => {
    await run("SET", "k", "v");
    expect(await run("TTL", "k")).toBe(-1n);
    expect(await run("TTL", "missing")).toBe(-2n);
    expect(await run("EXPIRE", "missing", "10")).toBe(0n);
    expect(await run("EXPIRE", "k", "10")).toBe(1n);
    expect(await run("PTTL", "k")).toBe(10_000n);
    clock.advance(2_400);
    expect(await run("TTL", "k")).toBe(8n); // 7600 ms rounds to 8 s
    expect(await run("PEXPIRE", "k", "500")).toBe(1n);
    expect(await run("PEXPIREAT", "k", String(clock.ms + 50))).toBe(1n);
    expect(await run("PTTL", "k")).toBe(50n);
    expect(await run("EXPIREAT", "k", String(Math.floor(clock.ms / 1000) + 100))).toBe(1n);
    expect(await run("PERSIST", "k")).toBe(1n);
    expect(await run("PERSIST", "k")).toBe(0n);
    expect(await run("TTL", "k")).toBe(-1n);
  });

  it("expiring into the past deletes at once", async () => {
    await run("SET", "k", "v");
    expect(await run("EXPIRE", "k", "-1")).toBe(1n);
    expect(await run("EXISTS", "k")).toBe(0n);
    await run("SET", "k", "v");
    expect(await run("PEXPIREAT", "k", String(clock.ms))).toBe(1n);
    expect(await run("EXISTS", "k")).toBe(0n);
  });

  it("EXPIRE NX / XX / GT / LT", async () => {
    await run("SET", "k", "v");
    expect(await run("EXPIRE", "k", "100", "XX")).toBe(0n);
    expect(await run("EXPIRE", "k", "100", "GT")).toBe(0n); // no TTL counts as infinite
    expect(await run("EXPIRE", "k", "100", "NX")).toBe(1n);
    expect(await run("EXPIRE", "k", "200", "NX")).toBe(0n);
    expect(await run("EXPIRE", "k", "50", "GT")).toBe(0n);
    expect(await run("EXPIRE", "k", "500", "GT")).toBe(1n);
    expect(await run("EXPIRE", "k", "600", "LT")).toBe(0n);
    expect(await run("EXPIRE", "k", "300", "LT")).toBe(1n);
    expect(await run("TTL", "k")).toBe(300n);
    expect(await run("EXPIRE", "k", "1", "NX", "GT")).toEqual({
      error: "ERR NX and XX, GT or LT options at the same time are not compatible",
    });
    expect(await run("EXPIRE", "k", "1", "GT", "LT")).toEqual({
      error: "ERR GT and LT options at the same time are not compatible",
    });
    expect(await run("EXPIRE", "k", "1", "BOGUS")).toEqual({
      error: "ERR Unsupported option BOGUS",
    });
  });

  it("expired keys vanish from every view (lazy and swept)", async () => {
    await run("SET", "short", "v", "PX", "100");
    await run("SET", "long", "v", "PX", "10000");
    await run("SET", "forever", "v");
    clock.advance(101);
    expect(await run("KEYS", "*")).toEqual(["long", "forever"]);
    expect(await run("DBSIZE")).toBe(2n);
    expect(await run("EXISTS", "short")).toBe(0n);
    expect(await run("SCAN", "0")).toEqual(["0", ["long", "forever"]]);
    clock.advance(20_000);
    expect(await run("DBSIZE")).toBe(1n);
  });

  it("collections can expire too", async () => {
    await run("HSET", "h", "f", "v");
    await run("PEXPIRE", "h", "10");
    clock.advance(11);
    expect(await run("HGET", "h", "f")).toBeNull();
    expect(await run("HSET", "h", "g", "w")).toBe(1n);
    expect(await run("PTTL", "h")).toBe(-1n);
  });

  it("KEYS and SCAN match glob patterns", async () => {
    await run("MSET", "user:1", "a", "user:2", "b", "user:10", "c", "admin", "d", "a*b", "e");
    const sorted = async (...command: string[]) =>
      [...((await run(...command)) as string[])].sort();
    expect(await sorted("KEYS", "user:?")).toEqual(["user:1", "user:2"]);
    expect(await sorted("KEYS", "user:*")).toEqual(["user:1", "user:10", "user:2"]);
    expect(await sorted("KEYS", "[au]*")).toEqual(["a*b", "admin", "user:1", "user:10", "user:2"]);
    expect(await sorted("KEYS", "[^u]*")).toEqual(["a*b", "admin"]);
    expect(await sorted("KEYS", "user:[0-1]*")).toEqual(["user:1", "user:10"]);
    expect(await sorted("KEYS", "a\\*b")).toEqual(["a*b"]);
    const scan = (await run("SCAN", "0", "MATCH", "user:*", "COUNT", "1")) as [string, string[]];
    expect(scan[0]).toBe("0");
    expect([...scan[1]].sort()).toEqual(["user:1", "user:10", "user:2"]);
    await run("HSET", "h", "f", "v");
    expect(await run("SCAN", "0", "TYPE", "hash")).toEqual(["0", ["h"]]);
    expect(await run("SCAN", "x")).toEqual({ error: "ERR invalid cursor" });
  });

  it("RENAME moves the value and its TTL", async () => {
    await run("SET", "a", "v", "PX", "5000");
    await run("SET", "b", "old");
    expect(await run("RENAME", "a", "b")).toEqual(OK);
    expect(await run("GET", "b")).toBe("v");
    expect(await run("PTTL", "b")).toBe(5000n);
    expect(await run("EXISTS", "a")).toBe(0n);
    expect(await run("RENAME", "a", "c")).toEqual({ error: "ERR no such key" });
  });

  it("FLUSHDB and FLUSHALL empty the keyspace", async () => {
    await run("MSET", "a", "1", "b", "2");
    expect(await run("FLUSHDB")).toEqual(OK);
    expect(await run("DBSIZE")).toBe(0n);
    await run("SET", "a", "1");
    expect(await run("FLUSHALL", "ASYNC")).toEqual(OK);
    expect(await run("DBSIZE")).toBe(0n);
  });

  it("PING, ECHO and TIME (from the injected clock)", async () => {
    expect(await run("PING")).toEqual({ status: "PONG" });
    expect(await run("PING", "hi")).toBe("hi");
    expect(await run("ECHO", "x")).toBe("x");
    clock.ms = 1_700_000_000_123.456;
    expect(await run("TIME")).toEqual(["1700000000", "123456"]);
  });

  it("MEMORY USAGE approximates a key's size: grows with its content, nil when missing", async () => {
    await run("SET", "small", "x");
    await run("SET", "large", "x".repeat(1000));
    await run("RPUSH", "list", "a", "b", "c");
    const small = await run("MEMORY", "USAGE", "small");
    const large = await run("MEMORY", "USAGE", "large");
    expect(typeof small === "bigint" && small > 0n).toBe(true);
    expect(typeof large === "bigint" && typeof small === "bigint" && large > small + 900n).toBe(
      true,
    );
    expect(typeof (await run("MEMORY", "USAGE", "list", "SAMPLES", "5"))).toBe("bigint");
    expect(await run("MEMORY", "USAGE", "missing")).toBeNull();
  });
});

describe("embedded engine: keyspace copies (replica mode)", () => {
  it("a snapshot is a deep copy; restoring it replaces every key and keeps absolute expiry", async () => {
    const { Keyspace } = await import("../../../../dev/engine/keyspace.js");
    const primary = new Keyspace();
    const replica = new Keyspace();
    primary.set("h", { type: "hash", data: new Map([["f", "1"]]) });
    const expiring = primary.set("e", { type: "string", data: "soon" });
    primary.setExpire("e", expiring, 1_000);
    replica.set("stale", { type: "string", data: "gone after restore" });

    const copy = primary.snapshot();
    const hash = primary.lookup("h", 0)?.value;
    if (hash?.type === "hash") hash.data.set("f", "2");
    replica.restore(copy);

    expect([...replica.keys(0)].sort()).toEqual(["e", "h"]);
    const copied = replica.lookup("h", 0)?.value;
    expect(copied?.type === "hash" ? copied.data.get("f") : undefined).toBe("1");
    expect(replica.lookup("e", 1_000)?.expireAt).toBe(1_000);
    expect(replica.lookup("e", 1_001)).toBeUndefined();
    replica.sweep(1_001);
    expect(replica.size(1_001)).toBe(1);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Backend, Reply } from "../../../dev/backend.js";
import {
  findRedisServerBinary,
  type RedisServerHandle,
  startRedisServer,
} from "../../../dev/redis-server.js";
import { createRedisUrlBackend } from "../../../dev/resp/redis-backend.js";
import { parseRedisUrl } from "../../../dev/resp/redis-url.js";
import { redisServerUnderTest } from "../../support/backends.js";

const text = (value: Reply | undefined) =>
  value?.type === "bulk" && value.value !== null
    ? Buffer.from(value.value).toString("utf8")
    : value;

describe("Redis URLs", () => {
  it("parses host, port, credentials and database", () => {
    expect(parseRedisUrl("redis://u%40x:p%3Ass@example.com:6380/3")).toEqual({
      host: "example.com",
      port: 6380,
      username: "u@x",
      password: "p:ss",
      db: 3,
      tls: false,
    });
    expect(parseRedisUrl("redis://:secret@[::1]")).toEqual({
      host: "::1",
      port: 6379,
      password: "secret",
      db: 0,
      tls: false,
    });
    expect(parseRedisUrl("rediss://h:1").tls).toBe(true);
  });

  it("rejects bad URLs without echoing the password", () => {
    expect(() => parseRedisUrl("http://h")).toThrow(/scheme/);
    expect(() => parseRedisUrl("redis://h/x")).toThrow(/database/);
    try {
      parseRedisUrl("redis://:hunter2@/0 bad");
    } catch (error) {
      expect(String(error)).not.toContain("hunter2");
    }
  });
});

// guard: these need a real redis-server; redisServerUnderTest throws under CI=true without one.
describe.runIf(redisServerUnderTest())("RESP backend on a real redis-server", () => {
  let server: RedisServerHandle;
  let backend: Backend;

  beforeAll(async () => {
    server = await startRedisServer({
      extraArgs: ["--requirepass", "pa ss"],
      password: "pa ss",
    });
    backend = await createRedisUrlBackend(
      `redis://:${encodeURIComponent("pa ss")}@127.0.0.1:${server.port}/2`,
    );
  });
  afterAll(async () => {
    await backend?.close();
    await server?.close();
  });

  it("authenticates and selects the database on every connection", async () => {
    expect(backend.description).toMatch(/^Redis 7\.\d+\.\d+ at 127\.0\.0\.1:\d+\/2$/);
    expect(backend.description).not.toContain("pa ss");
    await backend.command(["SET", "db-probe", "2"]);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => backend.command(["CLIENT", "INFO"])),
    );
    for (const info of results) expect(String(text(info))).toMatch(/ db=2 /);
  });

  it("refuses a wrong password with a message that does not contain it", async () => {
    const attempt = createRedisUrlBackend(`redis://:wrong-secret@127.0.0.1:${server.port}`);
    await expect(attempt).rejects.toThrow(/WRONGPASS|invalid password/i);
    await attempt.catch((error: unknown) => expect(String(error)).not.toContain("wrong-secret"));
  });

  it("supports ACL users", async () => {
    await backend.command(["ACL", "SETUSER", "alice", "on", ">wonder", "~*", "+@all"]);
    const alice = await createRedisUrlBackend(`redis://alice:wonder@127.0.0.1:${server.port}`);
    expect(text(await alice.command(["ACL", "WHOAMI"]))).toBe("alice");
    await alice.close();
  });

  it("keeps replies in order under heavy concurrent pipelining", async () => {
    const count = 2000;
    const results = await Promise.all(
      Array.from({ length: count }, (_, i) => backend.command(["ECHO", `m${i}`])),
    );
    expect(results.map(text)).toEqual(Array.from({ length: count }, (_, i) => `m${i}`));
  });

  it("runs pipelines in order with per-command errors", async () => {
    const replies = await backend.pipeline([
      ["SET", "p", "1"],
      ["INCR", "p"],
      ["HSET", "p", "f", "v"],
      ["GET", "p"],
    ]);
    expect(replies.map((r) => r.type)).toEqual(["status", "integer", "error", "bulk"]);
    expect(text(replies[3])).toBe("2");
  });

  it("keeps concurrent transactions atomic", async () => {
    await backend.command(["DEL", "tx"]);
    const results = await Promise.all(
      Array.from({ length: 100 }, () =>
        backend.transaction([
          ["INCR", "tx"],
          ["INCR", "tx"],
          ["INCR", "tx"],
        ]),
      ),
    );
    const seen: bigint[] = [];
    for (const result of results) {
      expect(result.type).toBe("array");
      const values = (result.type === "array" ? (result.value ?? []) : []).map((r) =>
        r.type === "integer" ? r.value : -1n,
      );
      expect(values[1]).toBe(values[0]! + 1n);
      expect(values[2]).toBe(values[0]! + 2n);
      seen.push(...values);
    }
    expect(seen.sort((a, b) => (a < b ? -1 : 1))).toEqual(
      Array.from({ length: 300 }, (_, i) => BigInt(i + 1)),
    );
  });

  it("returns runtime errors inside EXEC, and an error when Redis discards the transaction", async () => {
    const mixed = await backend.transaction([
      ["SET", "t", "x"],
      ["INCR", "t"],
      ["GET", "t"],
    ]);
    expect(mixed.type === "array" && mixed.value?.map((r) => r.type)).toEqual([
      "status",
      "error",
      "bulk",
    ]);
    const discarded = await backend.transaction([["SET", "t", "y"], ["NOSUCHCOMMAND"]]);
    expect(discarded.type === "error" && discarded.message).toMatch(/^EXECABORT.*unknown command/);
    expect(text(await backend.command(["GET", "t"]))).toBe("x");
  });

  it("refuses commands that would change a shared connection's state", async () => {
    for (const command of [
      ["MULTI"],
      ["SELECT", "1"],
      ["SUBSCRIBE", "c"],
      ["CLIENT", "REPLY", "OFF"],
    ]) {
      const result = await backend.command(command);
      expect(result.type === "error" && result.message).toMatch(/not supported/);
    }
    const tx = await backend.transaction([["INCR", "a"], ["EXEC"]]);
    expect(tx.type === "error" && tx.message).toMatch(/^EXECABORT/);
    // The pool still works normally afterwards.
    expect(await backend.command(["PING"])).toEqual({ type: "status", value: "PONG" });
  });

  it("runs blocking commands on their own connection, so others are not stuck behind them", async () => {
    const started = Date.now();
    const blocked = backend.command(["BLPOP", "empty-list", "0.5"]);
    const pings = await Promise.all(Array.from({ length: 20 }, () => backend.command(["PING"])));
    expect(Date.now() - started).toBeLessThan(400);
    expect(pings.every((p) => p.type === "status")).toBe(true);
    expect(await blocked).toEqual({ type: "array", value: null });
  });

  it("reuses a blocking command's connection once it returned, never while it blocks", async () => {
    const connectionsReceived = async () => {
      const info = await backend.command(["INFO", "stats"]);
      const text = info.type === "bulk" ? Buffer.from(info.value ?? []).toString() : "";
      return Number(/total_connections_received:(\d+)/.exec(text)?.[1]);
    };
    const before = await connectionsReceived();
    for (let i = 0; i < 10; i++) {
      await backend.command(["RPUSH", "reused-list", String(i)]);
      expect(await backend.command(["BLPOP", "reused-list", "1"])).toMatchObject({
        type: "array",
      });
    }
    // One connection opened for the first pop, none for the nine after it.
    expect((await connectionsReceived()) - before).toBeLessThanOrEqual(1);
    // Two blocked at once each have their own: both wake.
    const first = backend.command(["BLPOP", "reused-a", "2"]);
    const second = backend.command(["BLPOP", "reused-b", "2"]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await backend.command(["RPUSH", "reused-b", "b"]);
    await backend.command(["RPUSH", "reused-a", "a"]);
    const replies = await Promise.all([first, second]);
    expect(replies.map((r) => (r.type === "array" ? r.value?.length : -1))).toEqual([2, 2]);
  });

  it("replaces connections that Redis closed", async () => {
    const connectionsReceived = async () => {
      const info = await backend.command(["INFO", "stats"]);
      const text = info.type === "bulk" ? Buffer.from(info.value ?? []).toString() : "";
      return Number(/total_connections_received:(\d+)/.exec(text)?.[1]);
    };
    // The pool has a connection open; another client kills it (and every other but its own).
    expect(await backend.command(["PING"])).toEqual({ type: "status", value: "PONG" });
    const before = await connectionsReceived();
    const killer = await createRedisUrlBackend(
      `redis://:${encodeURIComponent("pa ss")}@127.0.0.1:${server.port}/2`,
    );
    let killed: Reply;
    try {
      killed = await killer.command(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
    } finally {
      await killer.close();
    }
    expect(killed.type).toBe("integer");
    expect(killed.type === "integer" && killed.value).toBeGreaterThanOrEqual(1n);
    // The first commands after the kill may fail (their connection is gone); the pool recovers.
    let recovered = false;
    for (let attempt = 0; attempt < 20 && !recovered; attempt++) {
      try {
        recovered = (await backend.command(["PING"])).type === "status";
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    expect(recovered).toBe(true);
    const replies = await Promise.all(Array.from({ length: 50 }, () => backend.command(["PING"])));
    expect(replies.every((r) => r.type === "status")).toBe(true);
    // On connections of its own, opened after the kill (the killer's was one more).
    expect((await connectionsReceived()) - before).toBeGreaterThanOrEqual(2);
  });

  it("fails clearly when Redis is unreachable", async () => {
    const unused = await startRedisServer();
    const port = unused.port;
    await unused.close();
    await expect(
      createRedisUrlBackend(`redis://127.0.0.1:${port}`, { connectTimeoutMs: 1000 }),
    ).rejects.toThrow(/cannot connect to Redis at 127\.0\.0\.1:\d+/);
  });
});

// guard: these spawn a real redis-server; redisServerUnderTest throws under CI=true without one.
describe.runIf(redisServerUnderTest())("spawned redis-server", () => {
  it("starts on a free port, reports its version and stops on close", async () => {
    const server = await startRedisServer();
    expect(server.url).toBe(`redis://127.0.0.1:${server.port}`);
    expect(server.version).toMatch(/^\d+\.\d+\.\d+/);
    const backend = await createRedisUrlBackend(server.url);
    const config = await backend.command(["CONFIG", "GET", "save"]);
    expect(config.type === "array" && text(config.value?.[1])).toBe("");
    const appendonly = await backend.command(["CONFIG", "GET", "appendonly"]);
    expect(appendonly.type === "array" && text(appendonly.value?.[1])).toBe("no");
    await backend.close();
    await server.close();
    await server.close();
    await expect(createRedisUrlBackend(server.url, { connectTimeoutMs: 500 })).rejects.toThrow(
      /cannot connect to Redis at 127\.0\.0\.1:\d+/,
    );
  });

  it("honours REDIS_SERVER_BIN", () => {
    expect(
      findRedisServerBinary({ REDIS_SERVER_BIN: "/nonexistent/redis-server" }),
    ).toBeUndefined();
    const found = findRedisServerBinary();
    expect(findRedisServerBinary({ REDIS_SERVER_BIN: found, PATH: "" })).toBe(found);
    expect(findRedisServerBinary({ PATH: "" })).toBeUndefined();
  });
});

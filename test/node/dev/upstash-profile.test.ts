/**
 * The `upstash` profile on both backends: blocking commands answer at once (or fail),
 * `allow-key-locking` is honoured and enforced, scripts are counted by the lock Upstash would
 * take, Upstash's limits and tokens; and the `redis` profile keeps a Redis's behaviour.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { DevServer } from "../../../dev/index.js";
import { commandKeys, KEY_SPECS } from "../../../dev/profile/key-specs.js";
import { resolveProfile } from "../../../dev/profile/settings.js";
import {
  backendKindsUnderTest,
  redisServerUnderTest,
  withDevServer,
} from "../../support/backends.js";
import { rawRequest, uniqueKey, upstash } from "../../support/rest.js";

const sha1 = (text: string) => createHash("sha1").update(text, "utf8").digest("hex");
const direct = (server: DevServer) => upstash(server, { enableAutoPipelining: false });
const dynamicKey = (key: string) =>
  `ERR Dynamic keys are not allowed in Lua scripts when 'allow-key-locking' flag is set. Key was: ${key}`;

/** One command through `POST /`, answered as JSON: `{ result }` or `{ error }`. */
async function run(server: DevServer, command: readonly unknown[], token = server.token) {
  const response = await fetch(`${server.url}/`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: JSON.stringify(command),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function pipeline(server: DevServer, commands: readonly (readonly unknown[])[]) {
  const response = await rawRequest(server, "/pipeline", { body: commands });
  return response.json() as Record<string, unknown>[];
}

const FLAGGED = "#!lua flags=allow-key-locking\n";

describe.each(backendKindsUnderTest())("upstash profile on %s", (kind) => {
  const server = withDevServer(kind, { profile: "upstash" });

  describe("blocking commands answer at once", () => {
    it("BLPOP returns the element there is, else nil, without waiting", async () => {
      const key = uniqueKey();
      await direct(server()).rpush(key, "a");
      const started = Date.now();
      expect(await direct(server()).exec(["BLPOP", key, "5"])).toEqual([key, "a"]);
      expect(await direct(server()).exec(["BLPOP", key, "5"])).toBeNull();
      expect(await direct(server()).exec(["BRPOP", key, "0"])).toBeNull();
      expect(Date.now() - started).toBeLessThan(2000);
    });

    it("every blocking form answers at once, also inside a pipeline and a transaction", async () => {
      const [list, other, zset, stream] = [uniqueKey(), uniqueKey(), uniqueKey(), uniqueKey()];
      const started = Date.now();
      const replies = await pipeline(server(), [
        ["RPUSH", list, "a", "b"],
        ["BLMOVE", list, other, "LEFT", "RIGHT", "5"],
        ["BRPOPLPUSH", list, other, "5"],
        ["BRPOPLPUSH", list, other, "5"],
        ["BLMPOP", "5", "1", list, "LEFT"],
        ["ZADD", zset, "1", "m"],
        ["BZPOPMIN", zset, "5"],
        ["BZPOPMAX", zset, "5"],
        ["XREAD", "BLOCK", "5000", "STREAMS", stream, "$"],
        ["LRANGE", other, "0", "-1"],
      ]);
      expect(replies).toEqual([
        { result: 2 },
        { result: "a" },
        { result: "b" },
        { result: null },
        { result: null },
        { result: 1 },
        { result: [zset, "m", "1"] },
        { result: null },
        { result: null },
        { result: ["b", "a"] },
      ]);
      const tx = await rawRequest(server(), "/multi-exec", { body: [["BLPOP", list, "5"]] });
      expect(tx.json()).toEqual([{ result: null }]);
      expect(Date.now() - started).toBeLessThan(2000);
    });

    // guard: WAIT is a replication command; only a real Redis answers it (the engine has none).
    it.runIf(kind === "redis-server")("WAIT answers at once", async () => {
      const started = Date.now();
      expect((await run(server(), ["WAIT", "1", "5000"])).body).toEqual({ result: 0 });
      // A Redis with no replicas also answers 0, but only after the full 5 s timeout.
      expect(Date.now() - started).toBeLessThan(1_000);
    });

    it("counts them, and reports a malformed one's own error", async () => {
      const before = server().stats.snapshot().blocking.answeredAtOnce;
      await run(server(), ["BLPOP", uniqueKey(), "1"]);
      expect(server().stats.snapshot().blocking.answeredAtOnce).toBe(before + 1);
      expect((await run(server(), ["BLPOP", uniqueKey(), "-1"])).body.error).toMatch(
        /timeout is negative/,
      );
    });
  });

  describe("allow-key-locking", () => {
    it("refuses a key not in KEYS with Upstash's error, from redis.call and redis.pcall", async () => {
      const [declared, other] = [uniqueKey(), uniqueKey()];
      const viaCall = `${FLAGGED}redis.call('SET', KEYS[1], 'v')\nreturn redis.call('GET', ARGV[1])`;
      expect(await run(server(), ["EVAL", viaCall, "1", declared, other])).toEqual({
        status: 400,
        body: { error: dynamicKey(other) },
      });
      const viaPcall = `${FLAGGED}local r = redis.pcall('INCR', ARGV[1])\nreturn r`;
      expect((await run(server(), ["EVAL", viaPcall, "1", declared, other])).body).toEqual({
        error: dynamicKey(other),
      });
      // The key was never touched.
      expect(await direct(server()).exists(other)).toBe(0);
      await expect(
        upstash(server()).eval(
          `${FLAGGED}return redis.call('GET', 'x' .. ARGV[1])`,
          [declared],
          ["1"],
        ),
      ).rejects.toThrow(dynamicKey("x1"));
    });

    it("checks every key of multi-key commands", async () => {
      const [a, b, c] = [uniqueKey(), uniqueKey(), uniqueKey()];
      const mset = `${FLAGGED}return redis.call('MSET', KEYS[1], '1', ARGV[1], '2')`;
      expect((await run(server(), ["EVAL", mset, "1", a, b])).body).toEqual({
        error: dynamicKey(b),
      });
      const union = `${FLAGGED}return redis.call('ZUNIONSTORE', KEYS[1], 2, KEYS[2], ARGV[1])`;
      expect((await run(server(), ["EVAL", union, "2", a, b, c])).body).toEqual({
        error: dynamicKey(c),
      });
      const del = `${FLAGGED}return redis.call('DEL', KEYS[1], KEYS[2])`;
      expect((await run(server(), ["EVAL", del, "2", a, b])).body).toEqual({ result: 0 });
      const keys = `${FLAGGED}return redis.call('KEYS', '*')`;
      expect((await run(server(), ["EVAL", keys, "0"])).body.error).toMatch(
        /^ERR Command 'keys' is not allowed in Lua scripts when 'allow-key-locking' flag is set/,
      );
    });

    it("holds a PUBLISH channel to the rule for keys: it must be in KEYS", async () => {
      const [declared, channel] = [uniqueKey(), uniqueKey()];
      const publish = `${FLAGGED}return redis.call('PUBLISH', ARGV[1], 'word')`;
      expect((await run(server(), ["EVAL", publish, "1", declared, channel])).body).toEqual({
        error: dynamicKey(channel),
      });
      expect((await run(server(), ["EVAL", publish, "1", channel, channel])).body).toEqual({
        result: 0,
      });
      // Unflagged, a channel is no key (as Redis's COMMAND GETKEYS says).
      const unflagged = "return redis.call('PUBLISH', ARGV[1], 'word')";
      expect((await run(server(), ["EVAL", unflagged, "0", channel])).body).toEqual({ result: 0 });
    });

    it("runs a script that touches only its KEYS, by EVAL and by EVALSHA", async () => {
      const [counter, log] = [uniqueKey(), uniqueKey()];
      const script = `${FLAGGED}redis.call('INCR', KEYS[1])\nredis.call('RPUSH', KEYS[2], ARGV[1])\nlocal t = redis.call('TIME')\nredis.call('PUBLISH', KEYS[1], 'x')\nreturn redis.call('GET', KEYS[1])`;
      expect((await run(server(), ["EVAL", script, "2", counter, log, "a"])).body).toEqual({
        result: "1",
      });
      // SCRIPT LOAD answers the SHA of the text as the client sent it, flag included.
      expect((await run(server(), ["SCRIPT", "LOAD", script])).body).toEqual({
        result: sha1(script),
      });
      expect((await run(server(), ["SCRIPT", "EXISTS", sha1(script)])).body).toEqual({
        result: [1],
      });
      expect((await run(server(), ["EVALSHA", sha1(script), "2", counter, log, "b"])).body).toEqual(
        { result: "2" },
      );
      const dynamic = `${FLAGGED}return redis.call('GET', ARGV[1])`;
      await run(server(), ["SCRIPT", "LOAD", dynamic]);
      expect((await run(server(), ["EVALSHA", sha1(dynamic), "1", counter, log])).body).toEqual({
        error: dynamicKey(log),
      });
      // @upstash/redis's createScript: EVALSHA, NOSCRIPT → EVAL, then EVALSHA again.
      const fresh = `${script}\n-- ${uniqueKey()}`;
      const created = upstash(server()).createScript<number>(fresh);
      expect(await created.exec([counter, log], ["c"])).toBe(3);
      expect(await created.exec([counter, log], ["d"])).toBe(4);
      expect(await direct(server()).lrange(log, 0, -1)).toEqual(["a", "b", "c", "d"]);
    });

    it("keeps the other flags, and names the client's SHA in errors", async () => {
      const key = uniqueKey();
      const readOnly =
        "#!lua flags=no-writes,allow-key-locking\nreturn redis.call('SET', KEYS[1], 'v')";
      expect((await run(server(), ["EVAL", readOnly, "1", key])).body.error).toMatch(
        /^ERR Write commands are not allowed from read-only scripts/,
      );
      await direct(server()).set(key, "text");
      const failing = `${FLAGGED}local x = 1\nreturn redis.call('INCR', KEYS[1])`;
      // The line is the key check's (2), not the user's (3): see docs/upstash.md.
      expect((await run(server(), ["EVAL", failing, "1", key])).body).toEqual({
        error: `ERR value is not an integer or out of range script: ${sha1(failing)}, on @user_script:2.`,
      });
    });

    it("counts scripts by the lock Upstash takes, and dynamic-key rejections", async () => {
      const key = uniqueKey();
      const stats = server().stats;
      const before = stats.snapshot().scripts;
      const plain = `return redis.call('GET', KEYS[1]) -- ${key}`;
      const flagged = `${FLAGGED}return redis.call('GET', KEYS[1]) -- ${key}`;
      await run(server(), ["EVAL", plain, "1", key]);
      await run(server(), ["EVALSHA", sha1(plain), "1", key]);
      await run(server(), ["EVALSHA", "0".repeat(40), "0"]); // NOSCRIPT: not a run
      await run(server(), ["EVAL", flagged, "1", key]);
      const dynamic = `${FLAGGED}return redis.call('GET', ARGV[1]) -- ${key}`;
      await run(server(), ["EVAL", dynamic, "0", key]); // rejected: GET of an undeclared key
      // Upstash: a script queued in a transaction runs under the global lock, flag or not.
      await rawRequest(server(), "/multi-exec", { body: [["EVAL", flagged, "1", key]] });
      const after = stats.snapshot().scripts;
      expect(after.globalLock - before.globalLock).toBe(3);
      expect(after.keyLocking - before.keyLocking).toBe(2); // the rejected one ran too
      expect(after.dynamicKeyRejections - before.dynamicKeyRejections).toBe(1);
      expect(after.globalLockBySha[sha1(plain)]).toBe(2);
      expect(after.globalLockBySha[sha1(flagged)]).toBe(1);
      const endpoint = await rawRequest(server(), "/_edgelock/stats");
      expect(endpoint.json()).toMatchObject({
        profile: "upstash",
        scripts: { globalLock: after.globalLock, keyLocking: after.keyLocking },
      });
    });
  });

  describe("limits", () => {
    it("refuses a key over 32 KiB with Upstash's error, anywhere a key goes", async () => {
      const long = "k".repeat(32 * 1024 + 1);
      const limitText = `ERR max key size exceeded. Limit: 32768 bytes, Actual: ${32 * 1024 + 1} bytes`;
      expect(await run(server(), ["SET", long, "v"])).toEqual({
        status: 400,
        body: { error: limitText },
      });
      expect((await run(server(), ["EVAL", "return 1", "1", long])).body).toEqual({
        error: limitText,
      });
      expect((await pipeline(server(), [["MGET", "a", long], ["PING"]]))[0]).toEqual({
        error: limitText,
      });
      const atLimit = "k".repeat(32 * 1024);
      expect((await run(server(), ["SET", atLimit, "v"])).body).toEqual({ result: "OK" });
      await run(server(), ["DEL", atLimit]);
    });
  });

  describe("tokens", () => {
    it("the read-only token reads, and is refused writes and KEYS, also as _token", async () => {
      const key = uniqueKey();
      await direct(server()).set(key, "v");
      const ro = server().readOnlyToken;
      expect((await run(server(), ["GET", key], ro)).body).toEqual({ result: "v" });
      expect(await run(server(), ["SET", key, "w"], ro)).toEqual({
        status: 400,
        body: { error: "NOPERM this user has no permissions to run the 'set' command" },
      });
      expect((await run(server(), ["KEYS", "*"], ro)).body.error).toMatch(/^NOPERM/);
      expect((await run(server(), ["EVAL_RO", "return 1", "0"], ro)).body).toEqual({ result: 1 });
      const viaQuery = await fetch(`${server().url}/get/${key}?_token=${ro}`);
      expect(await viaQuery.json()).toEqual({ result: "v" });
      const writeViaQuery = await fetch(`${server().url}/set/${key}/w?_token=${ro}`);
      expect(writeViaQuery.status).toBe(400);
      const full = await fetch(`${server().url}/set/${key}/w?_token=${server().token}`);
      expect(await full.json()).toEqual({ result: "OK" });
      const wrong = await fetch(`${server().url}/get/${key}?_token=nope`);
      expect(wrong.status).toBe(401);
    });
  });

  describe("endpoints", () => {
    it("/monitor streams each command; /publish reaches /subscribe", async () => {
      const controller = new AbortController();
      const response = await fetch(`${server().url}/monitor`, {
        method: "POST",
        headers: { authorization: `Bearer ${server().token}`, accept: "text/event-stream" },
        signal: controller.signal,
      });
      expect(response.headers.get("content-type")).toBe("text/event-stream");
      const reader = response.body!.getReader();
      const key = uniqueKey();
      await direct(server()).set(key, 'v"1');
      let seen = "";
      while (!seen.includes(key)) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += Buffer.from(value).toString("utf8");
      }
      controller.abort();
      expect(seen).toMatch(/^data: "OK"\n\n/);
      expect(seen).toMatch(
        new RegExp(`data: \\d+\\.\\d{6} \\[0 [^\\]]+\\] "set" "${key}" "v\\\\"1"`),
      );

      const channel = uniqueKey("ch");
      const subscriber = new AbortController();
      const stream = await fetch(`${server().url}/subscribe/${channel}`, {
        method: "POST",
        headers: { authorization: `Bearer ${server().token}`, accept: "text/event-stream" },
        signal: subscriber.signal,
      });
      const events = stream.body!.getReader();
      let received = "";
      const first = await events.read();
      received += Buffer.from(first.value!).toString("utf8");
      const published = await fetch(`${server().url}/publish/${channel}/hello`, {
        method: "POST",
        headers: { authorization: `Bearer ${server().token}` },
      });
      expect(await published.json()).toEqual({ result: 1 });
      while (!received.includes("message,")) {
        const { value, done } = await events.read();
        if (done) break;
        received += Buffer.from(value).toString("utf8");
      }
      subscriber.abort();
      expect(received).toBe(`data: subscribe,${channel},1\n\ndata: message,${channel},hello\n\n`);
    });
  });
});

describe.each(backendKindsUnderTest())("upstash profile, blocking: error, on %s", (kind) => {
  const server = withDevServer(kind, { profile: "upstash", blocking: "error" });

  it("refuses blocking commands with Upstash's error, and runs the rest", async () => {
    expect(await run(server(), ["BLPOP", uniqueKey(), "1"])).toEqual({
      status: 400,
      body: { error: "ERR Command is not available: 'BLPOP'" },
    });
    const stream = uniqueKey();
    expect(
      await pipeline(server(), [
        ["XREAD", "BLOCK", "10", "STREAMS", stream, "0"],
        ["XREAD", "STREAMS", stream, "0"],
        ["BZPOPMIN", stream, "1"],
      ]),
    ).toEqual([
      { error: "ERR Command is not available: 'XREAD'" },
      { result: null },
      { error: "ERR Command is not available: 'BZPOPMIN'" },
    ]);
    expect(server().stats.snapshot().blocking.refused).toBe(3);
  });

  it("refuses a request over the size limit with Upstash's error", async () => {
    const small = await (await import("../../../dev/index.js")).startDevServer({
      backend: kind,
      profile: "upstash",
      maxBodyBytes: 1024,
    });
    try {
      const response = await rawRequest(small, "/", { body: ["SET", "k", "v".repeat(2000)] });
      expect(response.status).toBe(400);
      expect(response.json()).toEqual({ error: "ERR max request size exceeded" });
    } finally {
      await small.close();
    }
  });
});

describe.each(backendKindsUnderTest())("redis profile on %s", (kind) => {
  const server = withDevServer(kind, { profile: "redis" });

  it("blocking pops still block", async () => {
    const started = Date.now();
    expect(await direct(server()).exec(["BLPOP", uniqueKey(), "0.3"])).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });

  it("refuses the flag as Redis 7 does, and counts unflagged scripts as global-lock", async () => {
    expect((await run(server(), ["EVAL", `${FLAGGED}return 1`, "0"])).body).toEqual({
      error: "ERR Unexpected flag in script shebang: allow-key-locking",
    });
    const before = server().stats.snapshot().scripts;
    await run(server(), ["EVAL", "return 1", "0"]);
    const after = server().stats.snapshot().scripts;
    expect(after.globalLock).toBe(before.globalLock + 1);
    expect(after.keyLocking).toBe(before.keyLocking);
    // No Upstash key limit here.
    const long = "k".repeat(33 * 1024);
    expect((await run(server(), ["SET", long, "v"])).body).toEqual({ result: "OK" });
    await run(server(), ["DEL", long]);
  });
});

describe("profile selection", () => {
  it("takes the explicit choice, then EDGELOCK_DEV_PROFILE, then the default", () => {
    expect(resolveProfile("upstash", { EDGELOCK_DEV_PROFILE: "redis" })).toBe("upstash");
    expect(resolveProfile(undefined, { EDGELOCK_DEV_PROFILE: "upstash" })).toBe("upstash");
    expect(resolveProfile(undefined, {})).toBe("upstash");
    expect(() => resolveProfile(undefined, { EDGELOCK_DEV_PROFILE: "upstsh" })).toThrow(
      /EDGELOCK_DEV_PROFILE/,
    );
  });
});

// guard: compared with a real redis-server; redisServerUnderTest throws under CI=true without one.
describe.runIf(redisServerUnderTest())("the key table agrees with redis-server", () => {
  const server = withDevServer("redis-server", { profile: "redis" });

  it("has Redis's first/last/step for every range command", async () => {
    const names = Object.entries(KEY_SPECS)
      .filter(([name, spec]) => spec.kind === "range" && name !== "xgroup" && name !== "xinfo")
      .map(([name]) => name);
    const info = (await run(server(), ["COMMAND", "INFO", ...names])).body.result as unknown[][];
    const mismatches = names.flatMap((name, index) => {
      const entry = info[index];
      const spec = KEY_SPECS[name]!;
      if (spec.kind !== "range") return [];
      const actual =
        entry === null || entry === undefined ? "missing" : entry.slice(3, 6).join(",");
      const expected = `${spec.first},${spec.last},${spec.step}`;
      return actual === expected ? [] : [`${name}: redis ${actual}, table ${expected}`];
    });
    expect(mismatches).toEqual([]);
  });

  it("finds the keys COMMAND GETKEYS finds for the other forms", async () => {
    const samples = [
      ["ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"],
      ["ZDIFF", "2", "a", "b"],
      ["LMPOP", "2", "a", "b", "LEFT"],
      ["ZMPOP", "1", "a", "MIN"],
      ["SINTERCARD", "2", "a", "b", "LIMIT", "1"],
      ["EVAL", "return 1", "2", "a", "b", "x"],
      ["FCALL", "f", "1", "a", "x"],
      ["XREAD", "COUNT", "1", "STREAMS", "a", "b", "0", "0"],
      ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "0"],
      ["XGROUP", "CREATE", "a", "g", "$"],
      ["XINFO", "STREAM", "a"],
      ["MSET", "a", "1", "b", "2"],
      ["BITOP", "AND", "d", "a", "b"],
      ["SET", "a", "1", "GET"],
    ];
    for (const sample of samples) {
      const { body } = await run(server(), ["COMMAND", "GETKEYS", ...sample]);
      expect(commandKeys(sample), sample.join(" ")).toEqual(body.result);
    }
  });
});

/** Blocking list pops over REST on both backends: waking, FIFO order, timeouts, disconnects, limits. */
import { describe, expect, it } from "vitest";
import type { DevServer } from "../../../dev/index.js";
import { backendKindsUnderTest, withDevServer } from "../../support/backends.js";
import { rawRequest, uniqueKey, upstash } from "../../support/rest.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A client without auto-pipelining, so a blocking command never holds up unrelated ones. */
const direct = (server: DevServer) => upstash(server, { enableAutoPipelining: false });

/** A raw POST of one command that the test can abort, as a client giving up would. */
function abortableCommand(server: DevServer, command: readonly string[], signal: AbortSignal) {
  return fetch(`${server.url}/`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.token}` },
    body: JSON.stringify(command),
    signal,
  }).catch(() => undefined);
}

describe.each(backendKindsUnderTest())("blocking pops on %s", (kind) => {
  // Blocking pops block on the redis profile only (Upstash answers them at once).
  const server = withDevServer(kind, { profile: "redis" });

  it("BLPOP waits for a push and returns [key, element]", async () => {
    const key = uniqueKey();
    const popped = direct(server()).exec(["BLPOP", key, "0"]);
    await sleep(200);
    await direct(server()).rpush(key, "hello");
    expect(await popped).toEqual([key, "hello"]);
  });

  it("serves blocked clients in arrival order", async () => {
    const key = uniqueKey();
    const pops: Promise<unknown>[] = [];
    for (let i = 0; i < 3; i++) {
      pops.push(direct(server()).exec(["BRPOP", key, "10"]));
      await sleep(150);
    }
    await direct(server()).rpush(key, "a", "b", "c");
    // BRPOP takes from the tail: the first client gets c.
    expect(await Promise.all(pops)).toEqual([
      [key, "c"],
      [key, "b"],
      [key, "a"],
    ]);
  });

  it("answers nil after a fractional-second timeout", async () => {
    const started = Date.now();
    expect(await direct(server()).exec(["BLPOP", uniqueKey(), "0.3"])).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    await expect(direct(server()).exec(["BLPOP", uniqueKey(), "-1"])).rejects.toThrow(
      "timeout is negative",
    );
  });

  it("is woken by a push from a transaction and from a Lua script", async () => {
    const [first, second] = [uniqueKey(), uniqueKey()];
    const fromMulti = direct(server()).exec(["BLPOP", first, "10"]);
    const fromLua = direct(server()).exec(["BLPOP", second, "10"]);
    await sleep(200);
    await direct(server()).multi().lpush(first, "m").exec();
    await direct(server()).eval("return redis.call('lpush', KEYS[1], 'l')", [second], []);
    expect(await fromMulti).toEqual([first, "m"]);
    expect(await fromLua).toEqual([second, "l"]);
  });

  it("BLMPOP pops up to COUNT elements from the first non-empty key", async () => {
    const [empty, full] = [uniqueKey(), uniqueKey()];
    const popped = direct(server()).exec(["BLMPOP", "10", "2", empty, full, "LEFT", "COUNT", "2"]);
    await sleep(200);
    await direct(server()).rpush(full, "x", "y", "z");
    expect(await popped).toEqual([full, ["x", "y"]]);
  });

  it("does not block inside MULTI/EXEC and is refused in Lua, as in Redis 7.0", async () => {
    const key = uniqueKey();
    const response = await rawRequest(server(), "/multi-exec", { body: [["BLPOP", key, "0"]] });
    expect(response.json()).toEqual([{ result: null }]);
    const script = "return redis.call('blpop', KEYS[1], 0)";
    await expect(direct(server()).eval(script, [key], [])).rejects.toThrow(
      "This Redis command is not allowed from script",
    );
  });

  it("keeps serving other requests while more clients block than the pool has connections", async () => {
    const key = uniqueKey();
    const blockers = new AbortController();
    for (let i = 0; i < 8; i++)
      void abortableCommand(server(), ["BLPOP", key, "0"], blockers.signal);
    await sleep(200);
    try {
      await direct(server()).set(uniqueKey(), "v");
      expect(await direct(server()).ping()).toBe("PONG");
    } finally {
      blockers.abort();
    }
  });

  it("releases a blocked command when its client disconnects", async () => {
    const key = uniqueKey();
    const gone = new AbortController();
    void abortableCommand(server(), ["BLPOP", key, "0"], gone.signal);
    await sleep(200);
    gone.abort();
    await sleep(300);
    await direct(server()).rpush(key, "kept");
    // Had the abandoned BLPOP stayed blocked, it would have taken the element.
    expect(await direct(server()).lrange(key, 0, -1)).toEqual(["kept"]);
  });
});

describe.each(backendKindsUnderTest())("the blocked-request limit on %s", (kind) => {
  const server = withDevServer(kind, { profile: "redis", maxBlockedRequests: 2 });

  it("refuses one blocked request over the limit with a clear error", async () => {
    const key = uniqueKey();
    const waiting = new AbortController();
    for (let i = 0; i < 2; i++)
      void abortableCommand(server(), ["BLPOP", key, "0"], waiting.signal);
    await sleep(200);
    try {
      const refused = await rawRequest(server(), "/", { body: ["BLPOP", key, "1"] });
      expect(refused.status).toBe(503);
      expect(refused.json()).toEqual({ error: "ERR too many blocked requests: the limit is 2" });
    } finally {
      waiting.abort();
    }
  });
});

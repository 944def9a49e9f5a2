/**
 * The billed-commands figure on both backends: what Upstash bills is every command a request
 * sends plus every redis.call/pcall its scripts ran (the embedded engine counts its own; on
 * redis-server each script run is read off INFO stats inside a MULTI of its own, so
 * concurrent requests are never counted into each other).
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { DevServer } from "../../../dev/index.js";
import { ServerStats } from "../../../dev/index.js";
import { backendKindsUnderTest, withDevServer } from "../../support/backends.js";
import { rawRequest, uniqueKey } from "../../support/rest.js";

const sha1 = (text: string) => createHash("sha1").update(text, "utf8").digest("hex");

/** A script that runs `calls` (≥ 2) redis.calls: SET, then GETs, returning the value. */
const scriptOf = (calls: number) =>
  `redis.call('SET', KEYS[1], ARGV[1])${" redis.call('GET', KEYS[1])".repeat(calls - 2)} return redis.call('GET', KEYS[1])`;

/** Stats that also keep each request's (commands, commands its scripts ran). */
class PerRequestStats extends ServerStats {
  readonly requestsSeen: { names: readonly string[]; scriptCommands: number }[] = [];
  override recordCommands(names: readonly string[], scriptCommands = 0): void {
    super.recordCommands(names, scriptCommands);
    this.requestsSeen.push({ names, scriptCommands });
  }
}

async function billedBy(server: DevServer, request: () => Promise<unknown>): Promise<number> {
  const before = server.stats.snapshot().billedCommands;
  await request();
  return server.stats.snapshot().billedCommands - before;
}

const post = (server: DevServer, path: string, body: unknown) =>
  rawRequest(server, path, { body }).then((response) => response.json());

describe.each(backendKindsUnderTest())("billed commands on %s", (kind) => {
  const stats = new PerRequestStats();
  // The `redis` profile runs these unflagged scripts as they are (under `upstash` they would be
  // global-lock scripts, which the script census refuses); the `upstash` case is at the end.
  const server = withDevServer(kind, { profile: "redis", stats });

  it("bills a script that ran 3 redis.calls as 4, by EVAL and by EVALSHA", async () => {
    const key = uniqueKey();
    const script = `redis.call('SET', KEYS[1], ARGV[1]) redis.call('INCR', KEYS[1]) return redis.call('GET', KEYS[1])`;
    expect(
      await billedBy(server(), async () => {
        expect(await post(server(), "/", ["EVAL", script, "1", key, "41"])).toEqual({
          result: "42",
        });
      }),
    ).toBe(4);
    expect(
      await billedBy(server(), async () => {
        expect(await post(server(), "/", ["EVALSHA", sha1(script), "1", key, "1"])).toEqual({
          result: "2",
        });
      }),
    ).toBe(4);
    const snapshot = server().stats.snapshot();
    expect(snapshot.billedCommands).toBe(snapshot.commands + snapshot.scriptCommands);
  });

  it("bills a plain command 1 and a pipeline of 3 commands 3", async () => {
    const key = uniqueKey();
    expect(await billedBy(server(), () => post(server(), "/", ["SET", key, "v"]))).toBe(1);
    expect(
      await billedBy(server(), () =>
        post(server(), "/pipeline", [
          ["GET", key],
          ["INCR", uniqueKey()],
          ["DEL", key],
        ]),
      ),
    ).toBe(3);
  });

  it("bills a script's failed calls but not calls refused before running, as Redis counts them", async () => {
    const key = uniqueKey();
    // INCR on text fails while running (billed); an unknown command never runs (not billed).
    const script =
      "redis.call('SET', KEYS[1], 'text') redis.pcall('INCR', KEYS[1]) redis.pcall('NOSUCHCOMMAND') return 1";
    expect(await billedBy(server(), () => post(server(), "/", ["EVAL", script, "1", key]))).toBe(3);
    // A script that raises still bills what it ran before: SET, then the failing INCR.
    const raising = "redis.call('SET', KEYS[1], 'text') return redis.call('INCR', KEYS[1])";
    expect(await billedBy(server(), () => post(server(), "/", ["EVAL", raising, "1", key]))).toBe(
      3,
    );
  });

  it("bills a NOSCRIPT EVALSHA 1 and keeps Redis's own errors and replies", async () => {
    const missing = "0123456789012345678901234567890123456789";
    expect(
      await billedBy(server(), async () => {
        const answer = await post(server(), "/", ["EVALSHA", missing, "0"]);
        expect(answer).toEqual({ error: "NOSCRIPT No matching script. Please use EVAL." });
      }),
    ).toBe(1);
    // A script refused while queuing gets the error it gets on its own, and runs nothing.
    const refused = await post(server(), "/pipeline", [["EVAL", "return 1"], ["PING"]]);
    expect(refused).toEqual([
      { error: "ERR wrong number of arguments for 'eval' command" },
      { result: "PONG" },
    ]);
  });

  it("bills scripts inside /multi-exec and inside a pipeline beside plain commands", async () => {
    const key = uniqueKey();
    expect(
      await billedBy(server(), () =>
        post(server(), "/multi-exec", [
          ["SET", key, "1"],
          ["EVAL", scriptOf(2), "1", key, "x"],
          ["GET", key],
        ]),
      ),
    ).toBe(3 + 2);
    expect(
      await billedBy(server(), async () => {
        const replies = await post(server(), "/pipeline", [
          ["EVAL", scriptOf(3), "1", key, "a"],
          ["GET", key],
          ["EVAL", scriptOf(5), "1", key, "b"],
        ]);
        expect(replies).toEqual([{ result: "a" }, { result: "a" }, { result: "b" }]);
      }),
    ).toBe(3 + 3 + 5);
  });

  it("counts each request's own script commands while many run at once", async () => {
    const sizes = Array.from({ length: 40 }, (_, index) => 2 + (index % 7));
    const marker = uniqueKey("concurrent");
    const seenBefore = stats.requestsSeen.length;
    const billed = await billedBy(server(), () =>
      Promise.all(
        sizes.map((calls, index) =>
          index % 3 === 0
            ? post(server(), "/pipeline", [["SET", `${marker}:${index}`, "v"], ["PING"]])
            : post(server(), "/", ["EVAL", scriptOf(calls), "1", `${marker}:${index}`, "v"]),
        ),
      ),
    );
    const expected = sizes.reduce(
      (sum, calls, index) => sum + (index % 3 === 0 ? 2 : 1 + calls),
      0,
    );
    expect(billed).toBe(expected);
    // Per request: each EVAL's own calls, never a neighbour's.
    const seen = stats.requestsSeen.slice(seenBefore);
    const evalCounts = seen
      .filter((request) => request.names[0] === "eval")
      .map((request) => request.scriptCommands)
      .sort((a, b) => a - b);
    const expectedCounts = sizes.filter((_, index) => index % 3 !== 0).sort((a, b) => a - b);
    expect(evalCounts).toEqual(expectedCounts);
    expect(
      seen.filter((request) => request.names[0] === "set").map((r) => r.scriptCommands),
    ).toEqual(Array(sizes.filter((_, index) => index % 3 === 0).length).fill(0));
  });

  describe("on the upstash profile, whose flagged scripts run rewritten", () => {
    const upstashServer = withDevServer(kind, { profile: "upstash" });

    it("bills a flagged script that ran 3 redis.calls as 4, by EVAL and by EVALSHA", async () => {
      const key = uniqueKey();
      const script = `#!lua flags=allow-key-locking
redis.call('SET', KEYS[1], ARGV[1]) redis.call('INCR', KEYS[1]) return redis.call('GET', KEYS[1])`;
      const run = (command: readonly string[]) => post(upstashServer(), "/", command);
      expect(
        await billedBy(upstashServer(), async () => {
          expect(await run(["EVAL", script, "1", key, "41"])).toEqual({ result: "42" });
        }),
      ).toBe(4);
      expect(
        await billedBy(upstashServer(), async () => {
          expect(await run(["EVALSHA", sha1(script), "1", key, "1"])).toEqual({ result: "2" });
        }),
      ).toBe(4);
      expect(upstashServer().stats.snapshot().scripts.keyLocking).toBe(2);
    });
  });

  it("serves the figure at /_edgelock/stats", async () => {
    const body = (await rawRequest(server(), "/_edgelock/stats")).json() as Record<string, unknown>;
    const snapshot = server().stats.snapshot();
    expect(body.billedCommands).toBeGreaterThanOrEqual(snapshot.commands);
    expect(body.scriptCommands).toBeGreaterThan(0);
  });
});

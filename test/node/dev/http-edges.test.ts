/** What a hand-written client or curl sees: malformed requests, path-style commands, limits. */
import { describe, expect, it } from "vitest";
import { backendKindsUnderTest, withDevServer } from "../../support/backends.js";
import { rawRequest, uniqueKey, upstash } from "../../support/rest.js";

describe.each(backendKindsUnderTest())("HTTP edge cases on %s", (kind) => {
  // The redis profile's 413 (the upstash profile answers Upstash's 400: upstash-profile.test.ts).
  const server = withDevServer(kind, { profile: "redis", maxBodyBytes: 1024 * 1024 });

  it("answers a body that is not JSON with 400 JSON", async () => {
    for (const body of ["not json", "", "[1,", '{"a":1}', '"get"', "[]", '[["get"],5]', "[[]]"]) {
      for (const path of ["/", "/pipeline", "/multi-exec"]) {
        const response = await rawRequest(server(), path, { body, method: "POST" });
        expect(response.status, `${path} ${body}`).toBe(400);
        expect(response.headers.get("content-type")).toBe("application/json");
        expect(response.json()).toEqual({ error: expect.stringMatching(/^ERR /) });
      }
    }
  });

  it("explains which argument is wrong", async () => {
    const response = await rawRequest(server(), "/pipeline", {
      body: [
        ["get", "a"],
        ["set", "b", null],
      ],
    });
    expect(response.status).toBe(400);
    expect(response.json()).toEqual({
      error: "ERR command 2: argument 2 is null; send a string or a number",
    });
  });

  it("stores booleans as the text true/false, which reads back as booleans", async () => {
    const key = uniqueKey();
    const response = await rawRequest(server(), "/", { body: ["set", key, true] });
    expect(response.json()).toEqual({ result: "OK" });
    expect(await upstash(server(), { automaticDeserialization: false }).get(key)).toBe("true");
    expect(await upstash(server()).get(key)).toBe(true);
  });

  it("answers unknown routes with 404 JSON and other methods with 405 JSON", async () => {
    const notFound = await rawRequest(server(), "/favicon.ico");
    expect(notFound.status).toBe(404);
    expect(notFound.json()).toEqual({ error: expect.any(String) });
    const wrongMethod = await rawRequest(server(), "/", { method: "DELETE" });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.json()).toEqual({ error: expect.any(String) });
    const getPipeline = await rawRequest(server(), "/pipeline");
    expect(getPipeline.status).toBe(405);
  });

  it("refuses bodies over the size limit with 413 JSON", async () => {
    const big = JSON.stringify(["set", uniqueKey(), "x".repeat(1024 * 1024 + 1)]);
    const response = await rawRequest(server(), "/", { body: big, method: "POST" });
    expect(response.status).toBe(413);
    expect(response.json()).toEqual({ error: expect.stringMatching(/exceeds/) });
  });

  it("runs path-style commands: GET /set/k/v, POST body as value, query as extra args", async () => {
    const key = uniqueKey();
    const path = `/set/${encodeURIComponent(key)}/a%2Fb`;
    expect((await rawRequest(server(), path)).json()).toEqual({ result: "OK" });
    expect((await rawRequest(server(), `/get/${encodeURIComponent(key)}`)).json()).toEqual({
      result: "a/b",
    });

    const posted = await rawRequest(server(), `/set/${encodeURIComponent(key)}?EX=100`, {
      body: '{"json":"value"}',
    });
    expect(posted.json()).toEqual({ result: "OK" });
    const redis = upstash(server());
    expect(await redis.get(key)).toEqual({ json: "value" });
    expect(await redis.ttl(key)).toBeGreaterThan(90);

    const head = await rawRequest(server(), `/get/${encodeURIComponent(key)}`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.text).toBe("");
    expect((await rawRequest(server(), "/nosuchcommand/x")).status).toBe(400);
  });

  it("refuses commands that need a connection of their own", async () => {
    for (const command of [["subscribe", "c"], ["multi"], ["select", "1"], ["monitor"]]) {
      const response = await rawRequest(server(), "/", { body: command });
      expect(response.status).toBe(400);
      expect(response.json()).toEqual({ error: expect.stringMatching(/not supported/) });
    }
    const pipeline = await rawRequest(server(), "/pipeline", {
      body: [["ping"], ["exec"], ["ping"]],
    });
    expect(pipeline.json()).toEqual([
      { result: "PONG" },
      { error: expect.stringMatching(/not supported/) },
      { result: "PONG" },
    ]);
    const multi = await rawRequest(server(), "/multi-exec", { body: [["ping"], ["multi"]] });
    expect(multi.status).toBe(400);
  });

  it("refuses the raw RESP2 response format with a JSON error", async () => {
    const response = await rawRequest(server(), "/", {
      body: ["ping"],
      headers: { "Upstash-Response-Format": "resp2" },
    });
    expect(response.status).toBe(400);
    expect(response.json()).toEqual({ error: expect.stringMatching(/not supported/) });
  });

  it("counts requests, commands and bytes, and resets the counters", async () => {
    const stats = server().stats;
    stats.reset();
    const redis = upstash(server());
    const pipeline = redis.pipeline();
    pipeline.set(uniqueKey(), "v");
    pipeline.get(uniqueKey());
    pipeline.ping();
    await pipeline.exec();
    await rawRequest(server(), "/favicon.ico");
    const snapshot = stats.snapshot();
    expect(snapshot.requests).toBe(2);
    expect(snapshot.requestsByRoute).toEqual({
      command: 0,
      pipeline: 1,
      "multi-exec": 0,
      path: 0,
      monitor: 0,
      stats: 0,
      unknown: 1,
    });
    expect(snapshot.commands).toBe(3);
    expect(snapshot.commandsByName).toEqual({ set: 1, get: 1, ping: 1 });
    expect(snapshot.responsesByStatus).toEqual({ 200: 1, 404: 1 });
    expect(snapshot.bytesIn).toBeGreaterThan(20);
    expect(snapshot.bytesOut).toBeGreaterThan(20);
    stats.reset();
    expect(stats.snapshot().requests).toBe(0);
  });
});

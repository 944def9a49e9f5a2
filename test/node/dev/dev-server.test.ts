/** startDevServer: backend selection, tokens, logging and shutdown. */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startDevServer } from "../../../dev/index.js";
import { type RedisServerHandle, startRedisServer } from "../../../dev/redis-server.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { rawRequest, upstash } from "../../support/rest.js";

// guard: these start a redis-server of their own; without one they cannot run (CI=true then fails
// here: backendKindsUnderTest throws).
describe.runIf(backendKindsUnderTest().includes("redis-server"))(
  "startDevServer with Redis",
  () => {
    let redis: RedisServerHandle;
    beforeAll(async () => {
      redis = await startRedisServer();
    });
    afterAll(async () => {
      await redis?.close();
    });

    it("connects to a given Redis URL", async () => {
      const server = await startDevServer({ backend: { url: `${redis.url}/1` } });
      try {
        expect(server.backendKind).toBe("redis-url");
        expect(server.backendDescription).toMatch(/^Redis \d+\.\d+\.\d+ at 127\.0\.0\.1:\d+\/1$/);
        expect(await upstash(server).ping()).toBe("PONG");
      } finally {
        await server.close();
      }
    });

    it("auto: prefers REDIS_URL when it is set", async () => {
      const previous = process.env.REDIS_URL;
      process.env.REDIS_URL = redis.url;
      try {
        const server = await startDevServer();
        expect(server.backendKind).toBe("redis-url");
        await server.close();
      } finally {
        if (previous === undefined) delete process.env.REDIS_URL;
        else process.env.REDIS_URL = previous;
      }
    });

    it("auto: spawns a redis-server when REDIS_URL is not set, and stops it on close", async () => {
      const previous = process.env.REDIS_URL;
      delete process.env.REDIS_URL;
      const lines: string[] = [];
      try {
        const server = await startDevServer({ log: (line) => lines.push(line) });
        expect(server.backendKind).toBe("redis-server");
        expect(server.backendDescription).toMatch(
          /^redis-server \d+\.\d+\.\d+ at 127\.0\.0\.1:\d+ \(spawned/,
        );
        const port = /:(\d+) /.exec(server.backendDescription)?.[1];
        expect(await upstash(server).set("k", "v")).toBe("OK");
        await server.close();
        await server.close();
        // The spawned redis-server is gone.
        const probe = await fetch(`http://127.0.0.1:${port}`).catch((error: unknown) => error);
        expect(probe).toBeInstanceOf(Error);
        expect(lines.some((line) => line.startsWith("backend: redis-server"))).toBe(true);
        expect(lines.some((line) => line.includes(server.token))).toBe(false);
      } finally {
        if (previous !== undefined) process.env.REDIS_URL = previous;
      }
    });

    it("generates a random 32-hex token, or uses the given one", async () => {
      const generated = await startDevServer({ backend: { url: redis.url } });
      const given = await startDevServer({ backend: { url: redis.url }, token: "my-token" });
      try {
        expect(generated.token).toMatch(/^[0-9a-f]{32}$/);
        expect(given.token).toBe("my-token");
        expect((await rawRequest(given, "/ping")).json()).toEqual({ result: "PONG" });
      } finally {
        await generated.close();
        await given.close();
      }
      await expect(startDevServer({ backend: { url: redis.url }, token: "" })).rejects.toThrow(
        /token/,
      );
    });

    it("fails to start on a busy port, without leaking the backend", async () => {
      const first = await startDevServer({ backend: { url: redis.url } });
      const port = Number(new URL(first.url).port);
      try {
        await expect(startDevServer({ backend: "redis-server", port })).rejects.toThrow(
          /EADDRINUSE/,
        );
      } finally {
        await first.close();
      }
    });

    it("stops answering after close()", async () => {
      const server = await startDevServer({ backend: { url: redis.url } });
      await server.close();
      // Refused: the port is closed (not a 5xx from a server still up).
      await expect(fetch(`${server.url}/ping`)).rejects.toMatchObject({
        name: "TypeError",
        cause: { code: "ECONNREFUSED" },
      });
    });

    it("reports a backend that went away as HTTP 500 JSON", async () => {
      const doomed = await startRedisServer();
      const server = await startDevServer({ backend: { url: doomed.url } });
      try {
        await doomed.close();
        const response = await rawRequest(server, "/", { body: ["ping"] });
        expect(response.status).toBe(500);
        expect(response.json()).toEqual({ error: expect.stringMatching(/^ERR backend failure/) });
      } finally {
        await server.close();
      }
    });
  },
);

// The embedded engine ships with the dev server (tsconfig.build.json builds dev/ whole), so only
// redis-server can be missing: a binary named by REDIS_SERVER_BIN that is not there stands for it.
describe("startDevServer without redis-server", () => {
  const savedBinary = process.env.REDIS_SERVER_BIN;
  const savedUrl = process.env.REDIS_URL;
  beforeEach(() => {
    process.env.REDIS_SERVER_BIN = "/nonexistent/redis-server";
    delete process.env.REDIS_URL;
  });
  afterEach(() => {
    for (const [name, value] of [
      ["REDIS_SERVER_BIN", savedBinary],
      ["REDIS_URL", savedUrl],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it("fails clearly when the redis-server backend is requested", async () => {
    await expect(startDevServer({ backend: "redis-server" })).rejects.toThrow(
      "redis-server not found: install Redis or set REDIS_SERVER_BIN",
    );
  });

  it("falls back to the embedded engine on auto", async () => {
    const server = await startDevServer();
    try {
      expect(server.backendKind).toBe("embedded");
      expect(await upstash(server).ping()).toBe("PONG");
    } finally {
      await server.close();
    }
  });
});

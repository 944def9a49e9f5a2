/** edgelock/testing: the vitest global setup and the bindings it hands to the Workers pool. */
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import {
  edgelockGlobalSetup,
  type ProvidedDevServer,
  upstashBindings,
} from "../../../dev/testing.js";

describe("edgelock/testing", () => {
  it("starts the embedded server for the run, provides it as bindings, and stops it", async () => {
    const provided = new Map<string, ProvidedDevServer>();
    const teardown = await edgelockGlobalSetup()({
      provide: (key, value) => provided.set(key, value),
    });
    const server = provided.get("edgelockDevServer");
    expect(server?.backendKind).toBe("embedded");
    const bindings = upstashBindings((key) => provided.get(key));
    expect(bindings).toEqual({
      UPSTASH_REDIS_REST_URL: server?.url,
      UPSTASH_REDIS_REST_TOKEN: server?.token,
    });
    const redis = new Redis({
      url: bindings.UPSTASH_REDIS_REST_URL,
      token: bindings.UPSTASH_REDIS_REST_TOKEN,
      retry: false,
    });
    expect(await redis.ping()).toBe("PONG");
    await teardown();
    await expect(redis.ping()).rejects.toThrow(/fetch failed|ECONNREFUSED|Unable to connect/i);
  });

  it("says what is missing when the global setup is not in the project", () => {
    expect(() => upstashBindings(() => undefined)).toThrow(/globalSetup: \["edgelock\/testing"\]/);
  });
});

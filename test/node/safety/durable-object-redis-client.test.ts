/**
 * The LockWatchdog's own Redis client re-sends nothing by itself: edgelock's transport owns
 * re-sends, and stops at a renewal's deadline (`sendBy`), so no request outlives the decision
 * it belonged to (a crashed holder's lock frees within the documented bound). @upstash/redis on
 * its defaults re-sends a request whose fetch threw up to 5 times over ~4 s. Against a server
 * that drops every connection.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { redisFromEnv } from "../../../src/durable-object/redis.js";
import { durableObjectWatchdog } from "../../../src/durable-object/watchdog.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";
import { afterThisTest, objectInNode } from "./durable-object-in-node.js";

describe("the LockWatchdog's default Redis client", () => {
  const bed = useTestBed(backendKindsUnderTest()[0]!);

  /** An HTTP server that drops every connection it gets: the client's fetch throws. */
  async function droppingServer(): Promise<{ url: string; requests: number[] }> {
    const requests: number[] = [];
    const server: Server = createServer((request) => {
      requests.push(Date.now());
      request.socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    afterThisTest(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const { port } = server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}`, requests };
  }

  it("does not re-send a request on its own when fetch throws", async () => {
    const dropping = await droppingServer();
    const redis = redisFromEnv({
      UPSTASH_REDIS_REST_URL: dropping.url,
      UPSTASH_REDIS_REST_TOKEN: "token",
    });
    const startedAt = Date.now();
    const failure = await Promise.race([
      redis!.eval("return 1", [], []).then(
        () => "answered",
        () => "failed",
      ),
      sleepMs(2_000).then(() => "still re-sending"),
    ]);
    expect(failure).toBe("failed");
    expect(Date.now() - startedAt).toBeLessThan(1_000);
    // @upstash/redis's default would re-send 5 times over ~4 s (the first after 50 ms).
    await sleepMs(700);
    expect(dropping.requests).toHaveLength(1);
  });

  it("sends no renewal after the object's transport gave up on it", async () => {
    const dropping = await droppingServer();
    // The object renews on a Redis whose connections drop; the holder acquires on the real one.
    const { object, namespace } = objectInNode(
      { UPSTASH_REDIS_REST_URL: dropping.url, UPSTASH_REDIS_REST_TOKEN: "token" },
      { alarms: false },
    );
    const prefix = freshPrefix();
    const watchdog = durableObjectWatchdog(namespace, { prefix, heartbeatIntervalMs: 0 });
    const client = bed.client({ prefix, watchdogTimeoutMs: 600, watchdog });
    const held = await client.lock("dropped").acquire();
    await watchdog.settled();
    // The renewal is due (at 200 ms) and the lease has passed: one failed round ends it.
    await sleepMs(700);
    const startedAt = Date.now();
    await object.alarm({ retryCount: 0, isRetry: false });
    const decidedAt = Date.now();
    // Its transport tried (first send + 2 re-sends, 50 and 100 ms apart) and ended the lease.
    expect(decidedAt - startedAt).toBeLessThan(1_500);
    expect(dropping.requests.length).toBeGreaterThanOrEqual(1);
    expect(await watchdog.status(held)).toMatchObject({
      state: "ended",
      reason: "renewal-failed",
    });
    // Nothing reaches Redis once that was decided: no copy outlives the decision.
    await sleepMs(4_500);
    expect(dropping.requests.filter((at) => at > decidedAt)).toEqual([]);
    expect(dropping.requests.length).toBeLessThanOrEqual(3);
  });
});

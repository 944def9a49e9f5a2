/** Pub/sub as server-sent events, through @upstash/redis's own subscribe()/psubscribe(). */
import { describe, expect, it } from "vitest";
import { backendKindsUnderTest, withDevServer } from "../../support/backends.js";
import { rawRequest, uniqueKey, upstash } from "../../support/rest.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it holds or 5 s pass (generous: the machine may be loaded). */
async function eventually(check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached within 5 s");
    await sleep(25);
  }
}

describe.each(backendKindsUnderTest())("pub/sub on %s", (kind) => {
  const server = withDevServer(kind);

  it("delivers PUBLISH from a command, a pipeline and a Lua script to subscribe()", async () => {
    const redis = upstash(server());
    const channel = uniqueKey("ch");
    const subscriber = redis.subscribe<unknown>([channel]);
    const received: unknown[] = [];
    let subscribed = 0;
    subscriber.on("subscribe", (count) => {
      subscribed = count;
    });
    subscriber.on("message", ({ channel: from, message }) => {
      if (from === channel) received.push(message);
    });
    try {
      await eventually(() => subscribed === 1);
      expect(await redis.publish(channel, { n: 1 })).toBe(1);
      await redis.pipeline().publish(channel, "two").exec();
      await redis.eval("return redis.call('publish', KEYS[1], ARGV[1])", [channel], ["3"]);
      await eventually(() => received.length === 3);
      expect(received).toEqual([{ n: 1 }, "two", 3]);
    } finally {
      await subscriber.unsubscribe();
    }
    // The stream's end released the subscription (on redis-server: its connection).
    await eventually(async () => (await redis.publish(channel, "late")) === 0);
  });

  it("delivers pattern messages to psubscribe()", async () => {
    const redis = upstash(server());
    const prefix = uniqueKey("news");
    // @upstash/redis JSON-parses pattern messages strictly, so publish JSON.
    const subscriber = redis.psubscribe<{ score: number }>([`${prefix}.*`]);
    const received: Array<{ pattern: string; channel: string; message: { score: number } }> = [];
    let subscribed = false;
    subscriber.on("psubscribe", () => {
      subscribed = true;
    });
    subscriber.on("pmessage", (event) => received.push(event));
    try {
      await eventually(() => subscribed);
      await redis.publish(`${prefix}.sport`, { score: 1 });
      await redis.publish(`${prefix}-other`, { score: 2 });
      await eventually(() => received.length === 1);
      expect(received).toEqual([
        { pattern: `${prefix}.*`, channel: `${prefix}.sport`, message: { score: 1 } },
      ]);
    } finally {
      await subscriber.unsubscribe();
    }
  });

  it("still refuses SUBSCRIBE as a plain command", async () => {
    const response = await rawRequest(server(), "/", { body: ["SUBSCRIBE", "x"] });
    expect(response.status).toBe(400);
  });
});

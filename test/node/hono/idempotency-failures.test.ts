/**
 * What idempotency() does when a step after the handler fails (the table in docs/webhooks.md):
 * the response is always sent; no failure lets a duplicate run while the key is locked.
 */
import { type Context, Hono } from "hono";
import { describe, expect, it } from "vitest";
import {
  type IdempotencyOptions,
  idempotency,
  type MiddlewareFailure,
  REPLAY_HEADER,
} from "../../../src/hono/index.js";
import { PUT } from "../../../src/hono/response-store.js";
import type { RedisLike } from "../../../src/index.js";
import { RELEASE } from "../../../src/locks/exclusive/release.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sentScript } from "../../support/sent-script.js";
import { freshPrefix, until, useTestBed } from "../exclusive/testbed.js";
import { executionContext, failingScripts, gate } from "./harness.js";

describe.each(backendKindsUnderTest())("idempotency() failure cases on %s", (kind) => {
  const bed = useTestBed(kind);

  function webhookApp(
    options: Partial<IdempotencyOptions> & { redis?: RedisLike },
    handler: (c: Context, run: number) => Response | Promise<Response>,
  ) {
    let runs = 0;
    const failures: MiddlewareFailure[] = [];
    const app = new Hono();
    app.onError((_error, c) => c.text("handler failed", 500));
    app.post(
      "/hook",
      idempotency({
        redis: options.redis ?? bed.redis(),
        prefix: freshPrefix(),
        onFailure: (failure) => void failures.push(failure),
        ...options,
      }),
      (c) => handler(c, ++runs),
    );
    const send = (key: string, ctx = executionContext()) =>
      app.request("/hook", { method: "POST", headers: { "idempotency-key": key } }, {}, ctx);
    return { send, failures, runs: () => runs };
  }

  it("store fails: the response is sent, duplicates get 409, the background retry stores it", async () => {
    const hook = webhookApp({}, (c) => {
      // The next three script requests fail before running: the store's three attempts.
      bed.server.faults.configure({
        failBeforeExecute: 1,
        commands: ["eval", "evalsha"],
        maxFaults: 3,
      });
      return c.text("processed", 201);
    });
    bed.server.faults.resetCounts();
    const ctx = executionContext();
    try {
      const first = await hook.send("evt-store", ctx);
      expect(first.status).toBe(201);
      expect(await first.text()).toBe("processed");
      expect(bed.server.faults.counts().failBeforeExecute).toBe(3);
      expect(hook.failures.map((f) => f.kind)).toEqual(["store"]);

      // Not stored, but still locked: a duplicate is turned away rather than run again.
      const duplicate = await hook.send("evt-store");
      expect(duplicate.status).toBe(409);

      await ctx.drain();
      const replay = await hook.send("evt-store");
      expect(replay.status).toBe(201);
      expect(replay.headers.get(REPLAY_HEADER)).toBe("true");
      expect(hook.runs()).toBe(1);
    } finally {
      bed.server.faults.disable();
    }
  });

  it("store keeps failing: the key stays locked for its lease, then a retry runs again", async () => {
    const isPut = await sentScript(PUT);
    let failOwner: string | undefined;
    // Every store of the first run fails, its background retries too (ARGV[1] is the owner).
    const redis = failingScripts(bed.redis(), isPut, (args) => args[0] === failOwner);
    const hook = webhookApp({ redis, leaseMs: 400 }, (c, run) => {
      if (run === 1) failOwner = c.get("idempotency").lock.owner;
      return c.text(`run ${run}`, 201);
    });
    expect((await hook.send("evt-lost")).status).toBe(201);
    expect((await hook.send("evt-lost")).status).toBe(409);
    // The documented at-least-once case: once the lease ends, the sender's retry runs again.
    await until(async () => (await hook.send("evt-lost")).status !== 409, 5_000);
    expect(hook.runs()).toBe(2);
    const replay = await hook.send("evt-lost");
    expect(await replay.text()).toBe("run 2");
    expect(hook.failures[0]).toMatchObject({ kind: "store", key: "evt-lost" });
  });

  it("release fails after the store: duplicates get the replay at once, the release is retried", async () => {
    const isRelease = await sentScript(RELEASE);
    let failing = false;
    const redis = failingScripts(bed.redis(), isRelease, () => failing);
    const hook = webhookApp({ redis }, (c) => {
      failing = true;
      return c.text("stored", 201);
    });
    const ctx = executionContext();
    expect((await hook.send("evt-release", ctx)).status).toBe(201);
    expect(hook.failures.map((f) => f.kind)).toEqual(["release"]);
    const before = bed.requests();
    const replay = await hook.send("evt-release");
    expect(bed.requests() - before).toBe(1);
    expect(replay.headers.get(REPLAY_HEADER)).toBe("true");
    failing = false;
    await ctx.drain();
    expect(redis.failures).toBeGreaterThanOrEqual(3);
    expect(hook.runs()).toBe(1);
  });

  it("the handler throws and the release fails: nothing is stored, the key frees itself", async () => {
    const isRelease = await sentScript(RELEASE);
    let failing = false;
    const redis = failingScripts(bed.redis(), isRelease, () => failing);
    const hook = webhookApp({ redis }, (_c, run) => {
      if (run === 1) {
        failing = true;
        throw new Error("handler failed");
      }
      return new Response("second run", { status: 201 });
    });
    const ctx = executionContext();
    expect((await hook.send("evt-throw", ctx)).status).toBe(500);
    expect(hook.failures.map((f) => f.kind)).toEqual(["release"]);
    failing = false;
    await ctx.drain();
    const retry = await hook.send("evt-throw");
    expect(await retry.text()).toBe("second run");
    expect(retry.headers.get(REPLAY_HEADER)).toBeNull();
  });

  it("the lease runs out mid-handler: a duplicate runs, the first response never overwrites its record", async () => {
    const firstInside = gate();
    const firstFinish = gate();
    const hook = webhookApp({ leaseMs: 200 }, async (c, run) => {
      if (run === 1) {
        firstInside.open();
        await firstFinish.opened;
      }
      return c.text(`run ${run}`, 201);
    });
    const first = hook.send("evt-slow");
    await firstInside.opened;
    // Past the lease the key is free: the duplicate takes it and completes.
    await until(async () => (await hook.send("evt-slow")).status === 201, 5_000);
    firstFinish.open();
    expect(await (await first).text()).toBe("run 1");
    expect(hook.runs()).toBe(2);
    const replay = await hook.send("evt-slow");
    expect(await replay.text()).toBe("run 2");
    expect(hook.failures).toHaveLength(1);
    expect(hook.failures[0]).toMatchObject({ kind: "release" });
    expect(hook.failures[0]!.consequence).toMatch(/lease ran out/);
  });

  it("Redis fails before anything ran: 500, and the retry runs the handler", async () => {
    const hook = webhookApp({}, (c) => c.text("ran", 201));
    // maxFaults counts from the last reset.
    bed.server.faults.resetCounts();
    bed.server.faults.configure({ failBeforeExecute: 1, maxFaults: 3 });
    try {
      expect((await hook.send("evt-down")).status).toBe(500);
      expect(hook.runs()).toBe(0);
    } finally {
      bed.server.faults.disable();
    }
    expect(await (await hook.send("evt-down")).text()).toBe("ran");
  });
});

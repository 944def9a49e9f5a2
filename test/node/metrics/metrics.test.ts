/**
 * The client's lifecycle events (acquired, notAcquired, renewed, released) against the local
 * REST server, and the two sinks of edgelock/metrics: what an Analytics Engine dataset and an
 * OpenTelemetry meter receive, without any owner token.
 */
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "../../../dev/index.js";
import type { LockEvent } from "../../../src/events.js";
import { LockClient } from "../../../src/index.js";
import {
  analyticsEngineSink,
  type MeterLike,
  openTelemetrySink,
  recordMetrics,
} from "../../../src/metrics/index.js";

describe("lock events and metrics sinks", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer({ backend: "embedded" });
  });
  afterAll(() => server.close());

  const clientOf = (options: { watchdogTimeoutMs?: number } = {}) =>
    new LockClient({
      redis: new Redis({ url: server.url, token: server.token }),
      prefix: `m${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`,
      ...options,
    });

  it("emits acquired, notAcquired, renewed and released with timings and request counts", async () => {
    const client = clientOf({ watchdogTimeoutMs: 600 });
    const events: LockEvent[] = [];
    const stop = recordMetrics(client, (event) => events.push(event));
    const held = await client.lock("a").acquire();
    expect(await client.lock("a").tryAcquire()).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 700)); // the watchdog renews every 200 ms
    await held.release();
    stop();
    await client
      .lock("a")
      .tryAcquire()
      .then((handle) => handle?.release());

    const acquired = events.find((event) => event.type === "acquired");
    expect(acquired).toMatchObject({
      name: "a",
      fencingToken: held.fencingToken,
      requests: 1,
      handOff: false,
    });
    expect(events.find((event) => event.type === "notAcquired")).toMatchObject({
      name: "a",
      reason: "busy",
      requests: 1,
    });
    const renewed = events.filter((event) => event.type === "renewed");
    expect(renewed.length).toBeGreaterThanOrEqual(1);
    const released = events.find((event) => event.type === "released");
    expect(released).toMatchObject({ name: "a", released: true });
    // guard: narrows the type only; the line above asserts it is the released event.
    if (released?.type === "released") expect(released.heldMs).toBeGreaterThanOrEqual(600);
    // After stop(), nothing more is recorded.
    expect(events.filter((event) => event.type === "acquired")).toHaveLength(1);
  });

  it("a waiter that gets the lock after a release counts its wait and its attempts", async () => {
    const client = clientOf();
    const events: LockEvent[] = [];
    recordMetrics(client, (event) => events.push(event));
    const held = await client.lock("w").acquire({ leaseMs: 5_000 });
    const waiter = client.lock("w").acquire({ waitMs: 10_000, leaseMs: 5_000 });
    setTimeout(() => void held.release(), 400);
    const second = await waiter;
    await second.release();
    const acquiredEvents = events.filter((event) => event.type === "acquired");
    const last = acquiredEvents.at(-1);
    expect(last?.type === "acquired" && last.waitedMs).toBeGreaterThanOrEqual(300);
    expect(last?.type === "acquired" && last.requests).toBeGreaterThanOrEqual(2);
  });

  it("Analytics Engine points and OpenTelemetry instruments carry no owner token", async () => {
    const client = clientOf();
    const points: { blobs?: string[]; doubles?: number[]; indexes?: string[] }[] = [];
    recordMetrics(client, analyticsEngineSink({ writeDataPoint: (point) => points.push(point) }));
    const recorded: string[] = [];
    const meter: MeterLike = {
      createCounter: (name) => ({
        add: (value, attributes) => recorded.push(`${name} ${value} ${JSON.stringify(attributes)}`),
      }),
      createHistogram: (name) => ({
        record: (value, attributes) =>
          recorded.push(`${name} ${value} ${JSON.stringify(attributes)}`),
      }),
    };
    recordMetrics(client, openTelemetrySink(meter));
    const held = await client.lock("orders:42").acquire({ leaseMs: 5_000 });
    await held.release();

    expect(points[0]).toEqual({
      blobs: ["acquired", "orders:42", "attempt"],
      doubles: [expect.any(Number), 1, held.fencingToken],
      indexes: ["orders:42"],
    });
    expect(points[1]?.blobs).toEqual(["released", "orders:42", "released"]);
    expect(recorded.some((line) => line.startsWith("edgelock.lock.wait "))).toBe(true);
    expect(recorded.some((line) => line.startsWith("edgelock.lock.hold "))).toBe(true);
    expect(JSON.stringify(points) + recorded.join("\n")).not.toContain(held.owner);
  });
});

/**
 * `edgelock/metrics`: records a LockClient's events — acquisitions, failed waits, hand-offs,
 * renewals, losses, releases — to Workers Analytics Engine or an OpenTelemetry meter. Nothing
 * recorded carries an owner token. See docs/inspector.md#metrics.
 * @module
 */
import { LOCK_EVENT_TYPES, type LockEvent } from "../events.js";
import type { PlainLockClient } from "../plain-lock-client.js";

/** Receives every event of a client (`recordMetrics`). */
export type MetricsSink = (event: LockEvent) => void;

/**
 * Sends every event of `client` to `sink`; returns the function that stops it. A throwing sink
 * never disturbs the lock (the client's emitter drops listener errors).
 * @example
 * recordMetrics(client, analyticsEngineSink(env.LOCK_METRICS));
 */
export function recordMetrics(client: PlainLockClient, sink: MetricsSink): () => void {
  const stops = LOCK_EVENT_TYPES.map((type) => client.on(type, sink));
  return () => {
    for (const stop of stops) stop();
  };
}

/** The one method of a Workers Analytics Engine dataset binding that the sink uses. */
export interface AnalyticsEngineDatasetLike {
  writeDataPoint(point: { blobs?: string[]; doubles?: number[]; indexes?: string[] }): void;
}

/** Options of `analyticsEngineSink()`. */
export interface AnalyticsEngineSinkOptions {
  /**
   * The index (sampling key, at most 96 bytes) and the second blob of each point: the lock
   * name, or a coarser group such as `orders:*` so that sampling keeps each group.
   * @default the lock name, cut to 96 bytes
   */
  nameOf?: (name: string) => string;
}

/** Duration (ms), requests, fencing token. */
function figures(event: LockEvent): [number, number, number] {
  switch (event.type) {
    case "acquired":
      return [event.waitedMs, event.requests, event.fencingToken];
    case "notAcquired":
      return [event.waitedMs, event.requests, 0];
    case "renewed":
      return [event.durationMs, 1, event.fencingToken];
    case "released":
      return [event.heldMs, 1, event.fencingToken];
    default:
      return [0, 0, 0];
  }
}

/** What an event says beyond its type: how it ended. */
function outcome(event: LockEvent): string {
  switch (event.type) {
    case "acquired":
      return event.handOff ? "handOff" : "attempt";
    case "notAcquired":
      return event.reason;
    case "released":
      return event.released ? "released" : "notHeld";
    case "lockLost":
      return event.reason.slice(0, 100);
    case "renewalFailed":
      return event.error instanceof Error ? event.error.name : "error";
    default:
      return "";
  }
}

function cut(text: string, bytes: number): string {
  const encoded = new TextEncoder().encode(text);
  if (encoded.byteLength <= bytes) return text;
  return new TextDecoder().decode(encoded.subarray(0, bytes)).replace(/\uFFFD+$/, "");
}

/**
 * A sink that writes one Analytics Engine data point per event: `blobs: [type, name, outcome]`,
 * `doubles: [ms, requests, fencingToken]` (ms: the wait, the hold or the renewal's round trip),
 * `indexes: [name]`. A SQL query is in docs/inspector.md#metrics.
 */
export function analyticsEngineSink(
  dataset: AnalyticsEngineDatasetLike,
  options: AnalyticsEngineSinkOptions = {},
): MetricsSink {
  const nameOf = options.nameOf ?? ((name: string) => name);
  return function writeLockEvent(event) {
    const name = cut(nameOf(event.name), 96);
    dataset.writeDataPoint({
      blobs: [event.type, name, outcome(event)],
      doubles: figures(event),
      indexes: [name],
    });
  };
}

/** The parts of an OpenTelemetry `Meter` the sink uses (structurally; no dependency). */
export interface MeterLike {
  createHistogram(
    name: string,
    options?: { description?: string; unit?: string },
  ): { record(value: number, attributes?: Record<string, string>): void };
  createCounter(
    name: string,
    options?: { description?: string; unit?: string },
  ): { add(value: number, attributes?: Record<string, string>): void };
}

/**
 * A sink for an OpenTelemetry meter (`metrics.getMeter("edgelock")`): the counter
 * `edgelock.lock.events` (attributes `event`, `lock`, `outcome`), and the histograms
 * `edgelock.lock.wait` (ms, acquisitions and failed waits), `edgelock.lock.hold` (ms, releases),
 * `edgelock.lock.renewal` (ms) and `edgelock.lock.requests` (attempts per acquisition).
 */
export function openTelemetrySink(meter: MeterLike): MetricsSink {
  const events = meter.createCounter("edgelock.lock.events", {
    description: "edgelock lock events",
  });
  const wait = meter.createHistogram("edgelock.lock.wait", {
    description: "time from acquire() to the hold or the end of the wait",
    unit: "ms",
  });
  const hold = meter.createHistogram("edgelock.lock.hold", {
    description: "time from acquisition to release",
    unit: "ms",
  });
  const renewal = meter.createHistogram("edgelock.lock.renewal", {
    description: "round trip of a watchdog renewal",
    unit: "ms",
  });
  const requests = meter.createHistogram("edgelock.lock.requests", {
    description: "attempts an acquisition sent",
  });
  return function recordLockEvent(event) {
    const attributes = { event: event.type, lock: event.name, outcome: outcome(event) };
    events.add(1, attributes);
    if (event.type === "acquired" || event.type === "notAcquired") {
      wait.record(event.waitedMs, attributes);
      requests.record(event.requests, attributes);
    } else if (event.type === "released") hold.record(event.heldMs, attributes);
    else if (event.type === "renewed") renewal.record(event.durationMs, attributes);
  };
}

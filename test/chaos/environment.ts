/**
 * The stage of a chaos run: the faulty local REST server, a second fault-free REST server on the
 * same Redis (the observer, which checks state without being lied to), and the isolates.
 */
import { Redis } from "@upstash/redis";
import { type DevServer, FaultController, ServerStats, startDevServer } from "../../dev/index.js";
import { startRestServer } from "../../dev/rest/server.js";
import { LockClient } from "../../src/index.js";
import type { ChaosBackend, ChaosConfig } from "./config.js";
import { KillableRenewer } from "./killable-renewer.js";
import type { ChaosIsolate } from "./primitive.js";
import type { Observer } from "./primitives/lock.js";

export interface ChaosEnvironment {
  /** The REST server every isolate goes through, with fault injection. */
  readonly server: DevServer;
  readonly observer: Observer;
  /** Key prefix of this run's locks; the resource keys live under `<prefix>-store`. */
  readonly prefix: string;
  close(): Promise<void>;
}

export interface EnvironmentOptions {
  readonly backend: ChaosBackend;
  readonly seed: number;
  /** Half refused before running, half executed and then answered into the void. */
  readonly faultRate: number;
}

export async function startEnvironment(options: EnvironmentOptions): Promise<ChaosEnvironment> {
  const server = await startDevServer({
    backend: options.backend,
    faults: {
      failBeforeExecute: options.faultRate / 2,
      dropAfterExecute: options.faultRate / 2,
      seed: options.seed,
    },
  });
  let observerServer: Awaited<ReturnType<typeof startRestServer>>;
  try {
    observerServer = await startRestServer({
      backend: server.backend,
      token: server.token,
      faults: new FaultController(),
      stats: new ServerStats(),
      host: "127.0.0.1",
      port: 0,
    });
  } catch (error) {
    await server.close();
    throw error;
  }
  const prefix = `chaos${Date.now().toString(36)}${options.seed.toString(36)}`;
  const observerRedis = new Redis({
    url: observerServer.url,
    token: server.token,
    enableTelemetry: false,
  });
  return {
    server,
    prefix,
    observer: {
      redis: observerRedis,
      client: new LockClient({ redis: observerRedis, prefix }),
    },
    async close() {
      await observerServer.close();
      await server.close();
    },
  };
}

/** One simulated isolate on the faulty server. */
export function createIsolate(
  env: ChaosEnvironment,
  id: number,
  options: Pick<ChaosConfig, "watchdogTimeoutMs" | "wait">,
): ChaosIsolate {
  const redis = new Redis({ url: env.server.url, token: env.server.token, enableTelemetry: false });
  const renewer = new KillableRenewer();
  const client = new LockClient({
    redis,
    prefix: env.prefix,
    watchdogTimeoutMs: options.watchdogTimeoutMs,
    wait: { ...options.wait, maxPolls: 10_000 },
    watchdog: renewer,
  });
  return { id, redis, client, renewer };
}

/**
 * The bench's backend, run in its own process so that the client's CPU time is the client's
 * alone: a redis-server, the local REST server in front of it, and a TCP latency proxy for the
 * ioredis peers. The parent drives it over IPC (see protocol.ts).
 */
import { startDevServer } from "../../dev/index.js";
import { isServerProfile } from "../../dev/profile/settings.js";
import { startRedisServer } from "../../dev/redis-server.js";
import { startLatencyProxy } from "./latency-proxy.js";
import type { ReadyMessage, Reply, Request, WireCounts } from "./protocol.js";

const send = (message: ReadyMessage | Reply) => process.send?.(message);

const profile = process.argv[2];
if (!isServerProfile(profile)) throw new Error(`bench backend: unknown profile ${profile}`);
const redis = await startRedisServer();
const rest = await startDevServer({ backend: { url: redis.url }, profile });
const proxy = await startLatencyProxy(redis.port);

async function shutdown(): Promise<void> {
  await proxy.close();
  await rest.close();
  await redis.close();
}

function restCounts(): WireCounts {
  const stats = rest.stats.snapshot();
  return {
    requests: stats.requests,
    bytesIn: stats.bytesIn,
    bytesOut: stats.bytesOut,
    // A subscription is a request (counted in `requests`); the messages pushed on streams are
    // not, and are shown beside the commands as "pushed" (each a hand-off word a waiter read).
    commandsByName: {
      ...stats.commandsByName,
      ...(stats.streams.subscriptions > 0 ? { subscribe: stats.streams.subscriptions } : {}),
      ...(stats.streams.pushedMessages > 0 ? { pushed: stats.streams.pushedMessages } : {}),
    },
  };
}

process.on("message", (message: Request) => {
  try {
    switch (message.op) {
      case "snapshot":
        send({ id: message.id, snapshot: { rest: restCounts(), tcp: proxy.counts() } });
        return;
      case "latency":
        rest.faults.configure({
          latencyMs: message.model.latencyMs,
          jitterMs: message.model.jitterMs,
        });
        proxy.setLatency(message.model);
        send({ id: message.id });
        return;
      case "close":
        void shutdown().then(() => {
          send({ id: message.id });
          process.disconnect();
        });
        return;
    }
  } catch (error) {
    send({ id: message.id, error: error instanceof Error ? error.message : String(error) });
  }
});
// If the parent dies, do not linger.
process.on("disconnect", () => {
  void shutdown().finally(() => process.exit(0));
});

send({
  type: "ready",
  restUrl: rest.url,
  token: rest.token,
  tcpPort: proxy.port,
  redisPort: redis.port,
  description: `redis-server ${redis.version}, REST server (profile ${profile}) and TCP proxy in a child process`,
});

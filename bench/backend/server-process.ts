/**
 * The bench's backend, run in its own process so that the client's CPU time is the client's
 * alone: a redis-server, the local REST server in front of it, and a TCP latency proxy for the
 * ioredis peers. The parent drives it over IPC (see protocol.ts).
 */
import { startDevServer } from "../../dev/index.js";
import { isServerProfile } from "../../dev/profile/settings.js";
import { startRedisServer } from "../../dev/redis-server.js";
import { RespConnection } from "../../dev/resp/connection.js";
import { parseRedisUrl } from "../../dev/resp/redis-url.js";
import { startLatencyProxy } from "./latency-proxy.js";
import type { ReadyMessage, Reply, Request, WireCounts } from "./protocol.js";

const send = (message: ReadyMessage | Reply) => process.send?.(message);

const profile = process.argv[2];
if (!isServerProfile(profile)) throw new Error(`bench backend: unknown profile ${profile}`);
const redis = await startRedisServer();
const rest = await startDevServer({ backend: { url: redis.url }, profile });
const proxy = await startLatencyProxy(redis.port);
// Reads the server's command counters, for the billed figure of every library alike.
const counters = await RespConnection.connect(parseRedisUrl(redis.url));

/**
 * What Upstash would bill for everything Redis ran so far: INFO commandstats' calls of every
 * command (a script counts once, and each command it ran once more), without the INFO readings
 * and the MULTI/EXEC the REST server wraps each script run in to meter it (never a library's).
 */
async function billedCommands(): Promise<number> {
  const [info] = await counters.send([["INFO", "commandstats"]]);
  const text =
    info?.type === "bulk" && info.value !== null ? Buffer.from(info.value).toString("latin1") : "";
  let billed = 0;
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (!METERING.has(match[1]!)) billed += Number(match[2]);
  }
  return billed;
}
const METERING = new Set(["info", "multi", "exec"]);

async function shutdown(): Promise<void> {
  await counters.close();
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
        void billedCommands().then(
          (billed) =>
            send({ id: message.id, snapshot: { rest: restCounts(), tcp: proxy.counts(), billed } }),
          (error: unknown) => send({ id: message.id, error: String(error) }),
        );
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

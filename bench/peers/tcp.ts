/** One ioredis connection of a TCP peer, through the latency proxy. */
import { Redis as IORedis } from "ioredis";
import type { PeerEnv } from "./peer.js";

export async function connectTcp(env: PeerEnv): Promise<IORedis> {
  const connection = new IORedis({
    host: "127.0.0.1",
    port: env.tcpPort,
    lazyConnect: true,
    // No INFO round trip before the first command: the bench warms connections up itself.
    enableReadyCheck: false,
  });
  // Failures reach the bench through the rejected commands; without a listener ioredis would
  // also print every connection error.
  connection.on("error", () => {});
  await connection.connect();
  return connection;
}

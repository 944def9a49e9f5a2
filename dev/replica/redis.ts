/**
 * Replica mode on redis-server: a second redis-server that is a real replica (REPLICAOF) of the
 * first, through a local TCP proxy that holds the primary's replication stream `lagMs` before
 * passing it on. Positions are replication offsets: the primary's `master_repl_offset` after a
 * write, the replica's `slave_repl_offset` for what it has applied (INFO replication).
 */
import net from "node:net";
import type { Backend } from "../backend.js";
import { type RedisServerHandle, startRedisServer } from "../redis-server.js";
import { createRedisUrlBackend } from "../resp/redis-backend.js";
import type { ReplicationLink } from "./index.js";

/** How often a read waiting for the replica asks it how far it is. */
const CATCH_UP_POLL_MS = 5;
/** How long the replica may take to finish its first full sync, beyond 4 × the lag. */
const FIRST_SYNC_TIMEOUT_MS = 10_000;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A proxy that passes what the primary sends `lagMs` late (and what the replica sends at once). */
async function startDelayProxy(
  primaryPort: number,
  lagMs: number,
): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const server = net.createServer((replicaSide) => {
    const primarySide = net.connect(primaryPort, "127.0.0.1");
    sockets.add(replicaSide).add(primarySide);
    replicaSide.on("data", (chunk) => primarySide.write(chunk));
    primarySide.on("data", (chunk) => {
      // Chunks of one delay leave in the order they came: the stream stays intact, only late.
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!replicaSide.destroyed) replicaSide.write(chunk);
      }, lagMs);
      timers.add(timer);
    });
    const end = () => {
      replicaSide.destroy();
      primarySide.destroy();
      sockets.delete(replicaSide);
      sockets.delete(primarySide);
    };
    for (const socket of [replicaSide, primarySide]) {
      socket.on("error", end);
      socket.on("close", end);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** One field of an INFO reply, e.g. `master_repl_offset`. */
async function infoField(backend: Backend, field: string): Promise<string | undefined> {
  const reply = await backend.command(["INFO", "replication"]);
  if (reply.type !== "bulk" || reply.value === null) return undefined;
  const text = Buffer.from(reply.value).toString("utf8");
  return new RegExp(`^${field}:(.*)$`, "m").exec(text)?.[1]?.trim();
}

async function offset(backend: Backend, field: string): Promise<number> {
  const value = Number(await infoField(backend, field));
  return Number.isFinite(value) ? value : 0;
}

class ReplicationOffsets implements ReplicationLink {
  #closed = false;

  constructor(
    private readonly primary: Backend,
    private readonly replica: Backend,
    private readonly onClose: () => Promise<void>,
  ) {}

  written(): Promise<number> {
    return this.primaryPosition();
  }

  primaryPosition(): Promise<number> {
    return offset(this.primary, "master_repl_offset");
  }

  applied(): Promise<number> {
    return offset(this.replica, "slave_repl_offset");
  }

  async caughtUp(position: number, signal: AbortSignal | undefined): Promise<void> {
    while (!this.#closed && !signal?.aborted && (await this.applied()) < position) {
      await sleep(CATCH_UP_POLL_MS);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.onClose();
  }
}

async function backendOf(server: RedisServerHandle, role: string): Promise<Backend> {
  try {
    return await createRedisUrlBackend(server.url, {
      description: `redis-server ${server.version} at 127.0.0.1:${server.port} (spawned ${role}, not persisted)`,
      onClose: () => server.close(),
    });
  } catch (error) {
    await server.close();
    throw error;
  }
}

/** Two spawned redis-servers, the second a replica of the first through the delay proxy. */
export async function startRedisServerReplica(
  lagMs: number,
): Promise<{ primary: Backend; replica: Backend; link: ReplicationLink }> {
  // The primary streams its first sync at once instead of waiting 5 s for more replicas.
  const primaryServer = await startRedisServer({ extraArgs: ["--repl-diskless-sync-delay", "0"] });
  const primary = await backendOf(primaryServer, "primary");
  const cleanups: (() => Promise<void>)[] = [() => primary.close()];
  try {
    const proxy = await startDelayProxy(primaryServer.port, lagMs);
    cleanups.unshift(() => proxy.close());
    const replica = await backendOf(
      await startRedisServer({ extraArgs: ["--replicaof", "127.0.0.1", String(proxy.port)] }),
      "replica",
    );
    cleanups.unshift(() => replica.close());
    const deadline = Date.now() + FIRST_SYNC_TIMEOUT_MS + 4 * lagMs;
    while ((await infoField(replica, "master_link_status")) !== "up") {
      if (Date.now() > deadline) throw new Error("the replica redis-server never synced");
      await sleep(20);
    }
    return {
      primary,
      replica,
      link: new ReplicationOffsets(primary, replica, () => proxy.close()),
    };
  } catch (error) {
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
    throw error;
  }
}

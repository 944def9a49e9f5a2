/**
 * A TCP proxy in front of redis-server that gives the TCP peers (ioredis) the same latency model
 * as the REST server: a command reaches Redis at once and its reply is held back for the round
 * trip (`latencyMs ± jitterMs`, uniform), order preserved. It also counts commands and bytes, so
 * that TCP peers are measured like the REST ones.
 */
import net from "node:net";
import type { LatencyModel, WireCounts } from "./protocol.js";

export interface LatencyProxy {
  readonly port: number;
  setLatency(model: LatencyModel): void;
  counts(): WireCounts;
  close(): Promise<void>;
}

export async function startLatencyProxy(targetPort: number): Promise<LatencyProxy> {
  let model: LatencyModel = { name: "0 ms", latencyMs: 0, jitterMs: 0 };
  let requests = 0;
  let bytesIn = 0;
  let bytesOut = 0;
  const byName = new Map<string, number>();
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    client.setNoDelay(true);
    const upstream = net.connect({ host: "127.0.0.1", port: targetPort });
    upstream.setNoDelay(true);
    sockets.add(client);
    sockets.add(upstream);
    const commands = new RespCommandCounter((name) => {
      requests += 1;
      byName.set(name, (byName.get(name) ?? 0) + 1);
    });
    const replies = new DelayedWriter(client);
    client.on("data", (chunk: Buffer) => {
      bytesIn += chunk.length;
      commands.push(chunk);
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      bytesOut += chunk.length;
      replies.write(chunk, Math.max(0, model.latencyMs + (Math.random() * 2 - 1) * model.jitterMs));
    });
    const closeBoth = () => {
      replies.cancel();
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("close", closeBoth);
    upstream.on("close", closeBoth);
    client.on("error", closeBoth);
    upstream.on("error", closeBoth);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("proxy has no TCP port");

  return {
    port: address.port,
    setLatency: (next) => {
      model = next;
    },
    counts: () => ({ requests, bytesIn, bytesOut, commandsByName: Object.fromEntries(byName) }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Writes chunks to a socket after their delay, strictly in the order given: a chunk waits for the
 * ones before it even if its own delay is shorter (one timer per socket, so that timer rounding
 * can never reorder replies).
 */
class DelayedWriter {
  private readonly queue: { due: number; chunk: Buffer }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly socket: net.Socket) {}

  write(chunk: Buffer, delayMs: number): void {
    const last = this.queue[this.queue.length - 1];
    const due = Math.max(performance.now() + delayMs, last?.due ?? 0);
    if (delayMs === 0 && last === undefined) {
      this.socket.write(chunk);
      return;
    }
    this.queue.push({ due, chunk });
    if (this.timer === undefined) this.schedule();
  }

  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }

  private schedule(): void {
    const head = this.queue[0];
    if (head === undefined) {
      this.timer = undefined;
      return;
    }
    this.timer = setTimeout(() => this.flush(), Math.max(0, head.due - performance.now()));
  }

  private flush(): void {
    const now = performance.now();
    // Timers may fire up to a millisecond early: treat anything due within 1 ms as due.
    while (this.queue.length > 0 && this.queue[0]!.due <= now + 1) {
      this.socket.write(this.queue.shift()!.chunk);
    }
    this.schedule();
  }
}

/**
 * Finds command boundaries in a client's RESP stream (arrays of bulk strings, as ioredis sends
 * them) and reports each command's name. Only counts: it never changes the stream.
 */
export class RespCommandCounter {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onCommand: (name: string) => void) {}

  push(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    for (;;) {
      const parsed = parseCommand(this.pending);
      if (parsed === undefined) return;
      this.onCommand(parsed.name);
      this.pending = this.pending.subarray(parsed.length);
    }
  }
}

/** The name and byte length of the first complete command in `buffer`, if there is one. */
function parseCommand(buffer: Buffer): { name: string; length: number } | undefined {
  const header = readLine(buffer, 0);
  if (header === undefined) return undefined;
  if (buffer[0] !== 0x2a /* '*' */) {
    // An inline command (not sent by ioredis): one line.
    return { name: header.text.split(" ")[0]?.toLowerCase() ?? "", length: header.next };
  }
  const count = Number(header.text.slice(1));
  let offset = header.next;
  let name = "";
  for (let i = 0; i < count; i++) {
    const line = readLine(buffer, offset);
    if (line === undefined) return undefined;
    const size = Number(line.text.slice(1));
    const end = line.next + size + 2;
    if (end > buffer.length) return undefined;
    if (i === 0) name = buffer.toString("latin1", line.next, line.next + size).toLowerCase();
    offset = end;
  }
  return { name, length: offset };
}

function readLine(buffer: Buffer, from: number): { text: string; next: number } | undefined {
  const end = buffer.indexOf("\r\n", from, "latin1");
  if (end < 0) return undefined;
  return { text: buffer.toString("latin1", from, end), next: end + 2 };
}

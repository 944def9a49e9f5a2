/**
 * Test helpers for the embedded engine: readable reply conversion, a minimal RESP2 client, and a
 * throwaway redis-server for differential tests.
 */
import { Buffer } from "node:buffer";
import { type ChildProcess, spawn } from "node:child_process";
import { createServer, Socket } from "node:net";
import type { Backend, Command, Reply } from "../../../../dev/backend.js";
import { createEmbeddedBackend } from "../../../../dev/engine/index.js";
import { findRedisServerBinary } from "../../../../dev/redis-server.js";

/** A reply in a form that is easy to assert on. */
export type Plain =
  | { readonly status: string }
  | { readonly error: string }
  | bigint
  | string
  | null
  | { readonly nilArray: true }
  | readonly Plain[];

/** Bulk strings become latin1 strings (byte-exact), integers bigints, nil bulk null. */
export function plain(reply: Reply): Plain {
  switch (reply.type) {
    case "status":
      return { status: reply.value };
    case "error":
      return { error: reply.message };
    case "integer":
      return reply.value;
    case "bulk":
      return reply.value === null ? null : Buffer.from(reply.value).toString("latin1");
    case "array":
      return reply.value === null ? { nilArray: true } : reply.value.map(plain);
  }
}

/** A test clock the engine reads through `options.now`. */
export class FakeClock {
  constructor(public ms = 1_700_000_000_000) {}
  readonly now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** An engine plus a `run` shortcut returning plain replies. */
export async function startEngine(clock?: FakeClock): Promise<{
  backend: Backend;
  run: (...command: (string | Uint8Array)[]) => Promise<Plain>;
}> {
  const backend = await createEmbeddedBackend(clock ? { now: clock.now } : {});
  return { backend, run: async (...command) => plain(await backend.command(command)) };
}

// ---- RESP2 client ------------------------------------------------------------------------

function encodeCommand(command: Command): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${command.length}\r\n`)];
  for (const arg of command) {
    const bytes = typeof arg === "string" ? Buffer.from(arg, "utf8") : Buffer.from(arg);
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}

/** Parses one reply at `offset`; returns undefined when more bytes are needed. */
function parseReply(buf: Buffer, offset: number): { reply: Reply; next: number } | undefined {
  const lineEnd = buf.indexOf("\r\n", offset);
  if (lineEnd < 0) return undefined;
  const kind = String.fromCharCode(buf[offset]!);
  const line = buf.toString("utf8", offset + 1, lineEnd);
  const next = lineEnd + 2;
  switch (kind) {
    case "+":
      return { reply: { type: "status", value: line }, next };
    case "-":
      return { reply: { type: "error", message: line }, next };
    case ":":
      return { reply: { type: "integer", value: BigInt(line) }, next };
    case "$": {
      const len = Number(line);
      if (len < 0) return { reply: { type: "bulk", value: null }, next };
      if (buf.length < next + len + 2) return undefined;
      return {
        reply: { type: "bulk", value: new Uint8Array(buf.subarray(next, next + len)) },
        next: next + len + 2,
      };
    }
    case "*": {
      const count = Number(line);
      if (count < 0) return { reply: { type: "array", value: null }, next };
      const items: Reply[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const parsed = parseReply(buf, at);
        if (parsed === undefined) return undefined;
        items.push(parsed.reply);
        at = parsed.next;
      }
      return { reply: { type: "array", value: items }, next: at };
    }
    default:
      throw new Error(`unexpected RESP type byte ${kind}`);
  }
}

export class RespClient {
  private buffer = Buffer.alloc(0);
  private readonly waiting: ((reply: Reply) => void)[] = [];

  private constructor(private readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      for (;;) {
        const parsed = parseReply(this.buffer, 0);
        if (parsed === undefined) break;
        this.buffer = this.buffer.subarray(parsed.next);
        this.waiting.shift()?.(parsed.reply);
      }
    });
  }

  static connect(port: number): Promise<RespClient> {
    return new Promise((resolve, reject) => {
      const socket = new Socket();
      socket.once("error", reject);
      socket.connect(port, "127.0.0.1", () => {
        socket.off("error", reject);
        resolve(new RespClient(socket));
      });
    });
  }

  command(command: Command): Promise<Reply> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.socket.write(encodeCommand(command));
    });
  }

  close(): void {
    this.socket.destroy();
  }
}

// ---- a throwaway redis-server ------------------------------------------------------------

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface RedisServer {
  readonly client: RespClient;
  stop(): Promise<void>;
}

/** Spawns the binary the shared check finds (PATH or REDIS_SERVER_BIN; see redisServerUnderTest). */
export async function startRedisServer(): Promise<RedisServer> {
  const binary = findRedisServerBinary();
  if (binary === undefined)
    throw new Error("redis-server not found: install Redis or set REDIS_SERVER_BIN");
  const port = await freePort();
  const child: ChildProcess = spawn(
    binary,
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: "ignore" },
  );
  let client: RespClient | undefined;
  for (let attempt = 0; attempt < 100 && client === undefined; attempt++) {
    try {
      client = await RespClient.connect(port);
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  if (client === undefined) {
    child.kill("SIGKILL");
    throw new Error("redis-server did not start");
  }
  const connected = client;
  return {
    client: connected,
    stop: async () => {
      connected.close();
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
    },
  };
}

/**
 * One pipelined RESP2 connection. Every `send()` is a single socket write; replies come back in
 * the order the commands were written, so pending requests wait in a FIFO.
 */
import net from "node:net";
import tls from "node:tls";
import type { Command, Reply } from "../backend.js";
import { RespParser } from "./parser.js";
import { encodeCommands } from "./protocol.js";
import { describeAddress, type RedisConnectionSettings } from "./redis-url.js";

/** The connection failed or closed before the reply arrived (the command may or may not have run). */
export class RespConnectionError extends Error {
  override readonly name = "RespConnectionError";
}

interface PendingBatch {
  readonly expected: number;
  readonly replies: Reply[];
  readonly resolve: (replies: Reply[]) => void;
  readonly reject: (error: Error) => void;
}

export interface RespConnectOptions {
  /** Give up connecting (TCP + AUTH/SELECT) after this long. Default 5000 ms. */
  readonly connectTimeoutMs?: number;
  /** Sent as CLIENT SETNAME so the connection is recognisable in CLIENT LIST. Default none. */
  readonly clientName?: string;
}

export class RespConnection {
  private readonly pending: PendingBatch[] = [];
  /** Index of the oldest pending batch; the array is compacted lazily to keep shift() O(1). */
  private head = 0;
  private closedError: Error | undefined;
  private readonly closeListeners: Array<() => void> = [];
  /** Set once the connection is subscribed: every reply from then on is a push for it. */
  private pushListener: ((reply: Reply) => void) | undefined;

  private constructor(private readonly socket: net.Socket) {
    const parser = new RespParser((reply) => this.deliver(reply));
    socket.on("data", (chunk: Buffer) => {
      try {
        parser.push(chunk);
      } catch (error) {
        this.fail(new RespConnectionError(`protocol error: ${(error as Error).message}`));
        socket.destroy();
      }
    });
    socket.on("error", (error) => this.fail(new RespConnectionError(error.message)));
    socket.on("close", () => this.fail(new RespConnectionError("connection closed")));
  }

  /** Opens a connection, authenticates and selects the database. */
  static async connect(
    settings: RedisConnectionSettings,
    options: RespConnectOptions = {},
  ): Promise<RespConnection> {
    const timeoutMs = options.connectTimeoutMs ?? 5000;
    const socket = await openSocket(settings, timeoutMs);
    socket.setNoDelay(true);
    socket.setKeepAlive(true);
    const connection = new RespConnection(socket);

    const handshake: Command[] = [];
    if (settings.password !== undefined) {
      handshake.push(
        settings.username === undefined
          ? ["AUTH", settings.password]
          : ["AUTH", settings.username, settings.password],
      );
    }
    if (settings.db !== 0) handshake.push(["SELECT", String(settings.db)]);
    if (options.clientName !== undefined) handshake.push(["CLIENT", "SETNAME", options.clientName]);
    if (handshake.length === 0) return connection;

    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    try {
      const replies = await connection.send(handshake);
      const failed = replies.find((reply) => reply.type === "error");
      if (failed?.type === "error") {
        // Redis error texts for AUTH/SELECT never echo the password.
        throw new RespConnectionError(
          `Redis at ${describeAddress(settings)} refused the connection setup: ${failed.message}`,
        );
      }
      return connection;
    } catch (error) {
      connection.destroy();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Number of batches written and still waiting for replies. */
  get pendingCount(): number {
    return this.pending.length - this.head;
  }

  get isOpen(): boolean {
    return this.closedError === undefined;
  }

  /** Writes the commands in one socket write; resolves with one reply per command, in order. */
  send(commands: readonly Command[]): Promise<Reply[]> {
    if (commands.length === 0) return Promise.resolve([]);
    if (this.closedError !== undefined) return Promise.reject(this.closedError);
    return new Promise<Reply[]>((resolve, reject) => {
      this.pending.push({ expected: commands.length, replies: [], resolve, reject });
      this.socket.write(encodeCommands(commands));
    });
  }

  /**
   * Switches the connection to pub/sub: writes the (P)SUBSCRIBE command, after which every reply
   * (the confirmations, then the messages) goes to `listener`. There is no way back.
   */
  enterPushMode(command: Command, listener: (reply: Reply) => void): void {
    if (this.closedError !== undefined) throw this.closedError;
    this.pushListener = listener;
    this.socket.write(encodeCommands([command]));
  }

  /** Called once when the connection closes for any reason. */
  onClose(listener: () => void): void {
    if (this.closedError !== undefined) listener();
    else this.closeListeners.push(listener);
  }

  /** Closes politely once pending replies have been received (QUIT-less: just ends the socket). */
  async close(): Promise<void> {
    if (this.closedError !== undefined) return;
    await new Promise<void>((resolve) => {
      this.onClose(resolve);
      this.socket.end();
      // Do not wait forever for a server that does not close its side.
      setTimeout(() => this.socket.destroy(), 1000).unref();
    });
  }

  /** Drops the connection immediately; pending batches are rejected. */
  destroy(): void {
    this.socket.destroy();
    this.fail(new RespConnectionError("connection destroyed"));
  }

  private deliver(reply: Reply): void {
    if (this.pushListener !== undefined) {
      this.pushListener(reply);
      return;
    }
    const batch = this.pending[this.head];
    if (batch === undefined) {
      // A reply nobody asked for means we lost track of the stream: it cannot be trusted any more.
      this.fail(new RespConnectionError("unexpected reply from Redis"));
      this.socket.destroy();
      return;
    }
    batch.replies.push(reply);
    if (batch.replies.length < batch.expected) return;
    this.head += 1;
    if (this.head > 1024 && this.head * 2 > this.pending.length) {
      this.pending.splice(0, this.head);
      this.head = 0;
    }
    batch.resolve(batch.replies);
  }

  private fail(error: Error): void {
    if (this.closedError !== undefined) return;
    this.closedError = error;
    const waiting = this.pending.splice(this.head);
    this.head = 0;
    this.pending.length = 0;
    for (const batch of waiting) batch.reject(error);
    for (const listener of this.closeListeners.splice(0)) listener();
  }
}

function openSocket(settings: RedisConnectionSettings, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const address = describeAddress(settings);
    const socket = settings.tls
      ? tls.connect({ host: settings.host, port: settings.port, servername: settings.host })
      : net.connect({ host: settings.host, port: settings.port });
    const readyEvent = settings.tls ? "secureConnect" : "connect";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new RespConnectionError(`timed out connecting to Redis at ${address}`));
    }, timeoutMs);
    socket.once("error", (error) => {
      clearTimeout(timer);
      reject(new RespConnectionError(`cannot connect to Redis at ${address}: ${error.message}`));
    });
    socket.once(readyEvent, () => {
      clearTimeout(timer);
      socket.removeAllListeners("error");
      resolve(socket);
    });
  });
}

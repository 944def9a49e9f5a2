/**
 * A small fixed-size pool of pipelined connections. Each request goes to the open connection with
 * the fewest batches in flight; closed connections are replaced on demand.
 */
import { RespConnection, type RespConnectOptions } from "./connection.js";
import type { RedisConnectionSettings } from "./redis-url.js";

export interface RespPoolOptions extends RespConnectOptions {
  /** Number of connections kept open. Default 4. */
  readonly size?: number;
}

export class RespPool {
  private readonly slots: Array<RespConnection | Promise<RespConnection> | undefined>;
  private closed = false;

  private constructor(
    private readonly settings: RedisConnectionSettings,
    private readonly options: RespPoolOptions,
  ) {
    this.slots = new Array(Math.max(1, options.size ?? 4)).fill(undefined);
  }

  /** Opens every connection up front, so a wrong address or password fails here, not later. */
  static async open(settings: RedisConnectionSettings, options: RespPoolOptions = {}) {
    const pool = new RespPool(settings, options);
    try {
      await Promise.all(pool.slots.map((_, index) => pool.connectSlot(index)));
    } catch (error) {
      await pool.close();
      throw error;
    }
    return pool;
  }

  /** The least busy open connection, reconnecting closed slots as needed. */
  async acquire(): Promise<RespConnection> {
    if (this.closed) throw new Error("connection pool is closed");
    let best: RespConnection | undefined;
    const reconnecting: Promise<RespConnection>[] = [];
    this.slots.forEach((slot, index) => {
      if (slot instanceof RespConnection && slot.isOpen) {
        if (best === undefined || slot.pendingCount < best.pendingCount) best = slot;
      } else if (slot instanceof Promise) {
        reconnecting.push(slot);
      } else {
        reconnecting.push(this.connectSlot(index));
      }
    });
    if (best !== undefined) return best;
    // Every connection is down: wait for the first reconnection (or all of them to fail).
    return Promise.any(reconnecting).catch((error: unknown) => {
      const reason = error instanceof AggregateError ? error.errors[0] : error;
      throw reason instanceof Error ? reason : new Error(String(reason));
    });
  }

  /** A connection outside the pool, for commands that block (BLPOP…); caller closes it. */
  openDedicated(): Promise<RespConnection> {
    return RespConnection.connect(this.settings, this.options);
  }

  async close(): Promise<void> {
    this.closed = true;
    const slots = this.slots.splice(0);
    await Promise.all(
      slots.map(async (slot) => {
        if (slot === undefined) return;
        try {
          await (await slot).close();
        } catch {
          // A slot that never connected has nothing to close.
        }
      }),
    );
  }

  private connectSlot(index: number): Promise<RespConnection> {
    const connecting = RespConnection.connect(this.settings, this.options).then(
      async (connection) => {
        if (this.closed) {
          await connection.close();
          throw new Error("connection pool is closed");
        }
        this.slots[index] = connection;
        connection.onClose(() => {
          if (this.slots[index] === connection) this.slots[index] = undefined;
        });
        return connection;
      },
      (error: unknown) => {
        if (this.slots[index] === connecting) this.slots[index] = undefined;
        throw error;
      },
    );
    this.slots[index] = connecting;
    // Reconnections started in the background may fail unobserved; callers that await still see it.
    connecting.catch(() => undefined);
    return connecting;
  }
}

/** A `Backend` that forwards commands to a real Redis over RESP2. */
import type {
  Backend,
  CallOptions,
  Command,
  CommandArg,
  PubSubMessage,
  Reply,
  SubscriptionKind,
} from "../backend.js";
import { reply } from "../backend.js";
import { isBlockingCommand, sharedConnectionRefusal } from "./command-policy.js";
import type { RespConnection } from "./connection.js";
import { RespPool } from "./pool.js";
import { describeAddress, parseRedisUrl } from "./redis-url.js";
import {
  bracketScripts,
  bracketTransaction,
  isScriptRun,
  totalCalls,
  unbracketReplies,
  unbracketTransaction,
} from "./script-metering.js";

export interface RedisUrlBackendOptions {
  /** Connections in the pool. Default 4. */
  readonly poolSize?: number;
  /** Connect timeout per connection. Default 5000 ms. */
  readonly connectTimeoutMs?: number;
  /** Overrides the description shown in logs. Default `Redis <version> at host:port[/db]`. */
  readonly description?: string;
  /** Runs after the pool is closed by `close()` (e.g. to stop a spawned server). Default none. */
  readonly onClose?: () => Promise<void>;
}

const CLIENT_NAME = "edgelock-dev";
/**
 * Connections kept open for the next blocking command once theirs returned: opening one per
 * blocked request (and waiting for its close) put a connect and a close on every parked waiter's
 * way, a few ms each on a busy machine. Each blocked request still has a connection of its own.
 */
const IDLE_BLOCKING_CONNECTIONS = 64;

/**
 * Connects to `redis://[user:password@]host:port[/db]` (or `rediss://` for TLS), sending AUTH and
 * SELECT on every connection. Rejects if Redis is unreachable or refuses the credentials.
 */
export async function createRedisUrlBackend(
  url: string,
  options: RedisUrlBackendOptions = {},
): Promise<Backend> {
  const settings = parseRedisUrl(url);
  const pool = await RespPool.open(settings, {
    clientName: CLIENT_NAME,
    ...(options.poolSize === undefined ? {} : { size: options.poolSize }),
    ...(options.connectTimeoutMs === undefined
      ? {}
      : { connectTimeoutMs: options.connectTimeoutMs }),
  });
  let description = options.description;
  if (description === undefined) {
    const version = await readServerVersion(pool).catch(() => undefined);
    const db = settings.db === 0 ? "" : `/${settings.db}`;
    description = `Redis ${version ?? "(unknown version)"} at ${describeAddress(settings)}${db}`;
  }
  return new RedisBackend(pool, description, options.onClose, await canReadCommandStats(pool));
}

/**
 * Whether INFO stats answers (a restricted ACL user may be refused it, INFO being
 * @dangerous): scripts are metered only then, since a refused INFO would discard the script's
 * transaction with it.
 */
async function canReadCommandStats(pool: RespPool): Promise<boolean> {
  try {
    const connection = await pool.acquire();
    const [info] = await connection.send([["INFO", "stats"]]);
    return totalCalls(info) !== undefined;
  } catch {
    return false;
  }
}

async function readServerVersion(pool: RespPool): Promise<string | undefined> {
  const connection = await pool.acquire();
  const [info] = await connection.send([["INFO", "server"]]);
  if (info?.type !== "bulk" || info.value === null) return undefined;
  return /redis_version:([^\r\n]+)/.exec(Buffer.from(info.value).toString("utf8"))?.[1];
}

class RedisBackend implements Backend {
  private closing: Promise<void> | undefined;
  /** Connections opened for blocking commands; dropped on close so nothing waits forever. */
  private readonly dedicated = new Set<RespConnection>();
  /** Dedicated connections whose blocking command returned, ready for the next one. */
  private readonly idleBlocking: RespConnection[] = [];

  constructor(
    private readonly pool: RespPool,
    readonly description: string,
    private readonly onClose: (() => Promise<void>) | undefined,
    /** Count the commands scripts run (script-metering.ts). */
    private readonly meterScripts: boolean,
  ) {}

  async command(command: Command, options?: CallOptions): Promise<Reply> {
    const [result] = await this.pipeline([command], options);
    return result ?? reply.error("ERR empty command");
  }

  async pipeline(commands: readonly Command[], options?: CallOptions): Promise<Reply[]> {
    const replies: Array<Reply | undefined> = commands.map((command) => {
      if (command.length === 0) return reply.error("ERR empty command");
      const refusal = sharedConnectionRefusal(command);
      return refusal === undefined ? undefined : reply.error(refusal);
    });
    const runnable = commands.filter((_, index) => replies[index] === undefined);
    const blocking = runnable.some(isBlockingCommand);
    let results: Reply[];
    if (this.meterScripts && runnable.some(isScriptRun)) {
      const sent = await this.run(bracketScripts(runnable), blocking, options?.signal);
      const metered = unbracketReplies(runnable, sent);
      results = metered.replies;
      if (metered.scriptCommands > 0) options?.onScriptCommands?.(metered.scriptCommands);
    } else {
      results = await this.run(runnable, blocking, options?.signal);
    }
    let next = 0;
    return replies.map((existing) => existing ?? results[next++]!);
  }

  async transaction(commands: readonly Command[], options?: CallOptions): Promise<Reply> {
    for (const command of commands) {
      if (command.length === 0)
        return reply.error("EXECABORT Transaction discarded: empty command");
      const refusal = sharedConnectionRefusal(command);
      if (refusal !== undefined) return reply.error(`EXECABORT Transaction discarded: ${refusal}`);
    }
    const { sent, metered } = this.meterScripts
      ? bracketTransaction(commands)
      : { sent: commands, metered: false };
    // MULTI, the commands and EXEC leave in one write on one connection: nothing can interleave.
    const replies = await this.run([["MULTI"], ...sent, ["EXEC"]], false, undefined);
    const exec = replies[replies.length - 1];
    const multi = replies[0];
    if (multi?.type === "error") return multi;
    if (exec === undefined) return reply.error("ERR no reply to EXEC");
    if (exec.type === "error") {
      // Say which command made Redis discard the transaction; EXECABORT alone does not.
      const cause = replies.slice(1, -1).find((queued) => queued.type === "error");
      return cause?.type === "error" ? reply.error(`${exec.message} (${cause.message})`) : exec;
    }
    if (exec.type === "array" && exec.value === null) {
      return reply.error("EXECABORT Transaction aborted");
    }
    if (!metered) return exec;
    const unbracketed = unbracketTransaction(commands, exec);
    if (unbracketed.scriptCommands > 0) options?.onScriptCommands?.(unbracketed.scriptCommands);
    return unbracketed.exec;
  }

  /** A dedicated connection per subscription, closed when `signal` aborts. */
  async subscribe(
    kind: SubscriptionKind,
    targets: readonly CommandArg[],
    onMessage: (message: PubSubMessage) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const connection = await this.openDedicated(signal);
    await new Promise<void>((resolve, reject) => {
      let confirmed = 0;
      connection.onClose(() => reject(new Error("the subscription connection closed")));
      connection.enterPushMode(
        [kind === "channel" ? "SUBSCRIBE" : "PSUBSCRIBE", ...targets],
        (push) => {
          const parts = push.type === "array" ? (push.value ?? []) : [];
          const words = parts.map((part) => (part.type === "bulk" ? part.value : null));
          const type =
            words[0] === null || words[0] === undefined ? "" : Buffer.from(words[0]).toString();
          if (push.type === "error") reject(new Error(push.message));
          else if (type === "subscribe" || type === "psubscribe") {
            confirmed += 1;
            if (confirmed === targets.length) resolve();
          } else if (type === "message" && words[1] && words[2]) {
            onMessage({ channel: words[1], message: words[2] });
          } else if (type === "pmessage" && words[1] && words[2] && words[3]) {
            onMessage({ pattern: words[1], channel: words[2], message: words[3] });
          }
        },
      );
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const connection of this.dedicated) connection.destroy();
      await this.pool.close();
      await this.onClose?.();
    })();
    return this.closing;
  }

  private async run(
    commands: readonly Command[],
    blocking: boolean,
    signal: AbortSignal | undefined,
  ): Promise<Reply[]> {
    if (commands.length === 0) return [];
    if (this.closing !== undefined) throw new Error("backend is closed");
    if (!blocking) return (await this.pool.acquire()).send(commands);
    const connection = this.idleBlocking.pop() ?? (await this.openBlocking());
    // The HTTP client went away: Redis drops the blocked command with its connection.
    const onAbort = () => connection.destroy();
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted || this.closing !== undefined) connection.destroy();
    try {
      return await connection.send(commands);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.afterBlocking(connection);
    }
  }

  /** A new connection for blocking commands, forgotten (and never reused) once it closes. */
  private async openBlocking(): Promise<RespConnection> {
    const connection = await this.pool.openDedicated();
    this.dedicated.add(connection);
    connection.onClose(() => {
      this.dedicated.delete(connection);
      const index = this.idleBlocking.indexOf(connection);
      if (index >= 0) this.idleBlocking.splice(index, 1);
    });
    return connection;
  }

  /** Keeps a blocking command's connection for the next one, or closes it (not waited for). */
  private afterBlocking(connection: RespConnection): void {
    if (
      connection.isOpen &&
      this.closing === undefined &&
      this.idleBlocking.length < IDLE_BLOCKING_CONNECTIONS
    ) {
      this.idleBlocking.push(connection);
    } else {
      void connection.close();
    }
  }

  /**
   * A connection outside the pool, for a blocking command or a subscription: one blocked client
   * never holds up the pool. Destroyed when `signal` aborts (the HTTP client went away), which
   * makes Redis drop the blocked command; forgotten once it closes.
   */
  private async openDedicated(signal: AbortSignal | undefined): Promise<RespConnection> {
    const connection = await this.pool.openDedicated();
    this.dedicated.add(connection);
    const onAbort = () => connection.destroy();
    signal?.addEventListener("abort", onAbort, { once: true });
    connection.onClose(() => {
      this.dedicated.delete(connection);
      signal?.removeEventListener("abort", onAbort);
    });
    if (signal?.aborted || this.closing !== undefined) connection.destroy();
    return connection;
  }
}

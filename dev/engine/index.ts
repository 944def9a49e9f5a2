/**
 * The embedded backend: an in-memory Redis 7 look-alike with real Lua scripting (Lua 5.4 via
 * wasmoon, adjusted to behave like Redis's Lua 5.1 for portable scripts). It is what the local
 * Upstash-compatible server falls back to when no `redis-server` is available.
 */
import type { Backend, CallOptions, Command, PubSubMessage, Reply } from "../backend.js";
import { commandName, isBlockingCommand } from "../resp/command-policy.js";
import { argToBinary, binaryToBytes } from "./bytes.js";
import { blockingTimeoutMs } from "./commands/blocking.js";
import { Engine } from "./engine.js";
import type { Keyspace } from "./keyspace.js";
import { LuaRuntime } from "./lua/runtime.js";
import { R } from "./replies.js";
import { BlockedClients } from "./waiters.js";

export interface EmbeddedBackendOptions {
  /** Clock in ms since the epoch (may be fractional); defaults to Date.now. For tests. */
  readonly now?: () => number;
  /** A script running longer than this is aborted with a BUSY error. Default 5000 ms. */
  readonly scriptTimeLimitMs?: number;
  /** Handed the engine's keyspace once it exists: replica mode copies it (dev/replica/). */
  readonly onKeyspace?: (keyspace: Keyspace) => void;
}

export const EMBEDDED_DESCRIPTION = "embedded engine (in-memory, Lua 5.4 via wasmoon)";

function toArgv(command: Command): string[] {
  return command.map(argToBinary);
}

function isNil(reply: Reply): boolean {
  return (reply.type === "bulk" || reply.type === "array") && reply.value === null;
}

export async function createEmbeddedBackend(
  options: EmbeddedBackendOptions = {},
): Promise<Backend> {
  const engine = new Engine(options.now ?? Date.now);
  options.onKeyspace?.(engine.db);
  const lua = await LuaRuntime.create(
    {
      call: (argv, readOnly) => engine.callFromScript(argv, readOnly),
      commandExists: (name) => engine.hasCommand(name),
      freezeTime: (fn) => engine.freezeTime(fn),
    },
    { timeLimitMs: options.scriptTimeLimitMs ?? 5000 },
  );
  engine.attachScripts(lua);
  const blocked = new BlockedClients();
  let closed = false;

  const ensureOpen = (): void => {
    if (closed) throw new Error("the embedded engine is closed");
  };

  /** Runs engine work, then lets parked blocking pops retry: the work may have pushed data. */
  const thenWake = <T>(result: T): T => {
    if (blocked.size > 0) blocked.wake();
    return result;
  };

  /**
   * The engine parks blocking list and sorted-set pops; XREAD/XREADGROUP … BLOCK answer at once
   * (see docs/dev-server.md), so they never park.
   */
  const parksInEngine = (command: Command): boolean => {
    const name = commandName(command);
    return isBlockingCommand(command) && name !== "xread" && name !== "xreadgroup";
  };

  /**
   * Runs engine work and reports the commands its scripts ran. The engine never yields inside,
   * so the count is exactly this call's, whatever else is in flight.
   */
  const metered = <T>(work: () => T, options: CallOptions | undefined): T => {
    const before = engine.scriptCommands;
    const result = work();
    const ran = engine.scriptCommands - before;
    if (ran > 0) options?.onScriptCommands?.(ran);
    return result;
  };

  /** A blocking command that found nothing parks (FIFO) until data, its timeout, or abort. */
  const runCommand = (command: Command, options: CallOptions | undefined): Promise<Reply> => {
    const argv = toArgv(command);
    const first = thenWake(metered(() => engine.execute(argv), options));
    if (!parksInEngine(command) || !isNil(first)) return Promise.resolve(first);
    const retry = () => {
      const next = engine.execute(argv);
      return isNil(next) ? undefined : next;
    };
    // Redis answers every timed-out blocking pop with a nil array, even BLMOVE (a nil bulk in MULTI).
    return blocked.park(retry, blockingTimeoutMs(argv), R.nilArray(), options?.signal);
  };

  return {
    description: EMBEDDED_DESCRIPTION,
    async command(command: Command, options?: CallOptions): Promise<Reply> {
      ensureOpen();
      return runCommand(command, options);
    },
    async pipeline(commands: readonly Command[], options?: CallOptions): Promise<Reply[]> {
      ensureOpen();
      if (!commands.some(parksInEngine)) {
        return thenWake(
          metered(() => commands.map((command) => engine.execute(toArgv(command))), options),
        );
      }
      // A blocking command holds up the rest of its pipeline, as on a Redis connection.
      const replies: Reply[] = [];
      for (const command of commands) replies.push(await runCommand(command, options));
      return replies;
    },
    async transaction(commands: readonly Command[], options?: CallOptions): Promise<Reply> {
      ensureOpen();
      return thenWake(metered(() => engine.transaction(commands.map(toArgv)), options));
    },
    async subscribe(kind, targets, onMessage: (message: PubSubMessage) => void, signal) {
      ensureOpen();
      const unsubscribe = engine.channels.subscribe(
        kind,
        targets.map(argToBinary),
        (channel, message, pattern) =>
          onMessage({
            channel: binaryToBytes(channel),
            message: binaryToBytes(message),
            ...(pattern === undefined ? {} : { pattern: binaryToBytes(pattern) }),
          }),
      );
      if (signal.aborted) unsubscribe();
      else signal.addEventListener("abort", unsubscribe, { once: true });
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      blocked.rejectAll(new Error("the embedded engine is closed"));
      lua.close();
    },
  };
}

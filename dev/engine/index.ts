/**
 * The embedded backend: an in-memory Redis 7 look-alike with real Lua scripting (Lua 5.4 via
 * wasmoon, adjusted to behave like Redis's Lua 5.1 for portable scripts). It is what the local
 * Upstash-compatible server falls back to when no `redis-server` is available.
 */
import type { Backend, Command, Reply } from "../backend.js";
import { argToBinary } from "./bytes.js";
import { Engine } from "./engine.js";
import { LuaRuntime } from "./lua/runtime.js";

export interface EmbeddedBackendOptions {
  /** Clock in ms since the epoch (may be fractional); defaults to Date.now. For tests. */
  readonly now?: () => number;
  /** A script running longer than this is aborted with a BUSY error. Default 5000 ms. */
  readonly scriptTimeLimitMs?: number;
}

export const EMBEDDED_DESCRIPTION = "embedded engine (in-memory, Lua 5.4 via wasmoon)";

function toArgv(command: Command): string[] {
  return command.map(argToBinary);
}

export async function createEmbeddedBackend(
  options: EmbeddedBackendOptions = {},
): Promise<Backend> {
  const engine = new Engine(options.now ?? Date.now);
  const lua = await LuaRuntime.create(
    {
      call: (argv, readOnly) => engine.callFromScript(argv, readOnly),
      commandExists: (name) => engine.hasCommand(name),
      freezeTime: (fn) => engine.freezeTime(fn),
    },
    { timeLimitMs: options.scriptTimeLimitMs ?? 5000 },
  );
  engine.attachScripts(lua);
  let closed = false;

  const ensureOpen = (): void => {
    if (closed) throw new Error("the embedded engine is closed");
  };

  return {
    description: EMBEDDED_DESCRIPTION,
    async command(command: Command): Promise<Reply> {
      ensureOpen();
      return engine.execute(toArgv(command));
    },
    async pipeline(commands: readonly Command[]): Promise<Reply[]> {
      ensureOpen();
      return commands.map((command) => engine.execute(toArgv(command)));
    },
    async transaction(commands: readonly Command[]): Promise<Reply> {
      ensureOpen();
      return engine.transaction(commands.map(toArgv));
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      lua.close();
    },
  };
}

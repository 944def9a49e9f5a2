/**
 * The synchronous core: resolves commands against the command table, runs them against the
 * keyspace, and provides the script and transaction entry points. Everything here runs to
 * completion without yielding, which is what makes scripts and transactions atomic.
 */
import type { Reply } from "../backend.js";
import { asciiLower } from "./bytes.js";
import { buildCommandTable } from "./commands/index.js";
import type { CommandContext, CommandSpec, ScriptHost } from "./context.js";
import { CommandError, Errors, unknownCommand, wrongArity } from "./errors.js";
import { Keyspace } from "./keyspace.js";
import { ChannelRegistry } from "./pubsub.js";
import { R } from "./replies.js";

type Resolved =
  | { readonly spec: CommandSpec }
  | { readonly error: string; readonly kind: "unknown" | "arity" };

/** How often (ms of clock time) expired keys are actively swept. */
const SWEEP_INTERVAL_MS = 1000;

function arityOk(arity: number, argc: number): boolean {
  return arity >= 0 ? argc === arity : argc >= -arity;
}

export class Engine implements CommandContext {
  readonly db = new Keyspace();
  readonly channels = new ChannelRegistry();
  private readonly commands = buildCommandTable();
  /** Clock reading captured when a script or transaction started; undefined otherwise. */
  private frozenAt: number | undefined;
  private lastSweep = Number.NEGATIVE_INFINITY;
  private scriptHost: ScriptHost | undefined;
  private scriptCommandCount = 0;

  constructor(private readonly clock: () => number) {}

  get scripts(): ScriptHost {
    if (this.scriptHost === undefined) throw new Error("scripting is not initialised");
    return this.scriptHost;
  }

  attachScripts(host: ScriptHost): void {
    this.scriptHost = host;
  }

  now(): number {
    return Math.floor(this.frozenAt ?? this.clock());
  }

  nowMicros(): bigint {
    return BigInt(Math.floor((this.frozenAt ?? this.clock()) * 1000));
  }

  freezeTime<T>(fn: () => T): T {
    if (this.frozenAt !== undefined) return fn();
    this.frozenAt = this.clock();
    try {
      return fn();
    } finally {
      this.frozenAt = undefined;
    }
  }

  /**
   * Commands scripts have run so far (redis.call/pcall that reached a command; the ones refused
   * before running, e.g. unknown or a write in a read-only script, are not counted, as in Redis's
   * INFO commandstats). Upstash bills each.
   */
  get scriptCommands(): number {
    return this.scriptCommandCount;
  }

  hasCommand(name: string): boolean {
    return this.commands.has(asciiLower(name));
  }

  /** Runs one client command. */
  execute(argv: readonly string[]): Reply {
    this.maybeSweep();
    const resolved = this.resolve(argv);
    if ("error" in resolved) return R.error(resolved.error);
    return this.invoke(resolved.spec, argv);
  }

  /** Runs a command issued by redis.call/pcall, with the checks and messages Redis applies there. */
  callFromScript(argv: readonly string[], readOnly: boolean): Reply {
    const resolved = this.resolve(argv);
    if ("error" in resolved) {
      return R.error(
        resolved.kind === "unknown"
          ? "ERR Unknown Redis command called from script"
          : "ERR Wrong number of args calling Redis command from script",
      );
    }
    const { spec } = resolved;
    if (spec.noScript) return R.error("ERR This Redis command is not allowed from script");
    if (spec.write && readOnly)
      return R.error("ERR Write commands are not allowed from read-only scripts.");
    this.scriptCommandCount += 1;
    return this.invoke(spec, argv);
  }

  /**
   * MULTI/EXEC: commands that would be rejected while queuing (unknown, wrong arity, not allowed
   * in MULTI) discard the whole transaction; runtime errors become per-command error replies.
   */
  transaction(commands: readonly (readonly string[])[]): Reply {
    this.maybeSweep();
    const specs: CommandSpec[] = [];
    let discarded = false;
    for (const argv of commands) {
      const resolved = this.resolve(argv);
      if ("error" in resolved || resolved.spec.noMulti) discarded = true;
      else specs.push(resolved.spec);
    }
    if (discarded) return R.error(Errors.execAbort);
    return this.freezeTime(() => R.array(commands.map((argv, i) => this.invoke(specs[i]!, argv))));
  }

  private resolve(argv: readonly string[]): Resolved {
    const name = argv[0];
    if (name === undefined) return { error: "ERR empty command", kind: "unknown" };
    const spec = this.commands.get(asciiLower(name));
    if (spec === undefined) return { error: unknownCommand(name, argv.slice(1)), kind: "unknown" };
    if (!arityOk(spec.arity, argv.length)) return { error: wrongArity(spec.name), kind: "arity" };
    if (spec.subcommands !== undefined) {
      const sub = asciiLower(argv[1]!);
      const arity = spec.subcommands[sub];
      if (arity === undefined) {
        return {
          error: `ERR unknown subcommand '${argv[1]!.slice(0, 128)}'. Try ${spec.name.toUpperCase()} HELP.`,
          kind: "unknown",
        };
      }
      if (!arityOk(arity, argv.length))
        return { error: wrongArity(`${spec.name}|${sub}`), kind: "arity" };
    }
    return { spec };
  }

  private invoke(spec: CommandSpec, argv: readonly string[]): Reply {
    try {
      return spec.handler(this, argv);
    } catch (error) {
      if (error instanceof CommandError) return R.error(error.message);
      const detail = error instanceof Error ? error.message : String(error);
      return R.error(`ERR internal error in the embedded engine: ${detail}`);
    }
  }

  private maybeSweep(): void {
    if (this.frozenAt !== undefined) return;
    const now = this.clock();
    if (now - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    this.db.sweep(Math.floor(now));
  }
}

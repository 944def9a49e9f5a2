/** What a command handler sees, and how commands are declared. */
import type { Reply } from "../backend.js";
import type { Keyspace } from "./keyspace.js";
import type { ChannelRegistry } from "./pubsub.js";

/** Script execution services the scripting commands need (implemented by the Lua runtime). */
export interface ScriptHost {
  /** Runs EVAL/EVAL_RO (`body` given) or EVALSHA/EVALSHA_RO (`sha` given). */
  run(
    source: { readonly body: string } | { readonly sha: string },
    keys: readonly string[],
    args: readonly string[],
    readOnly: boolean,
  ): Reply;
  /** Compiles and caches a script; returns its SHA-1 or throws a CommandError. */
  load(body: string): string;
  exists(sha: string): boolean;
  flush(): void;
  /** FUNCTION LOAD: runs the library code and registers its functions; returns the library name. */
  loadLibrary(code: string, replace: boolean): string;
  /** FCALL / FCALL_RO. */
  callFunction(
    name: string,
    keys: readonly string[],
    args: readonly string[],
    readOnly: boolean,
  ): Reply;
  deleteLibrary(name: string): boolean;
  flushLibraries(): void;
  libraries(): readonly FunctionLibrary[];
}

export interface FunctionLibrary {
  readonly name: string;
  readonly code: string;
  readonly functions: readonly {
    readonly name: string;
    readonly flags: readonly string[];
    /** register_function's `description`, or null. */
    readonly description: string | null;
  }[];
}

export interface CommandContext {
  readonly db: Keyspace;
  /** Current time in whole ms; frozen for the duration of a script or transaction. */
  now(): number;
  /** Current time in µs for TIME (same freezing rules). */
  nowMicros(): bigint;
  readonly scripts: ScriptHost;
  /** Pub/sub subscribers, for PUBLISH. */
  readonly channels: ChannelRegistry;
}

export type Handler = (ctx: CommandContext, argv: readonly string[]) => Reply;

export interface CommandSpec {
  /** Lower-case name. */
  readonly name: string;
  /** Redis arity: N means exactly N (name included), -N means at least N. */
  readonly arity: number;
  /** Modifies data: refused inside read-only scripts. */
  readonly write?: boolean;
  /** Refused when called from a script (EVAL, SCRIPT, ...). */
  readonly noScript?: boolean;
  /** Refused inside MULTI (queuing it aborts the transaction). */
  readonly noMulti?: boolean;
  /** Subcommand name → arity, for container commands like SCRIPT. */
  readonly subcommands?: Readonly<Record<string, number>>;
  readonly handler: Handler;
}

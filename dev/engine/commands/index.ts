/** The command table: every command the embedded engine understands, by lower-case name. */
import type { CommandSpec } from "../context.js";
import { blockingCommands } from "./blocking.js";
import { hashCommands } from "./hashes.js";
import { keyCommands } from "./keys.js";
import { listCommands } from "./lists.js";
import { pubsubCommands } from "./pubsub.js";
import { scriptingCommands, scriptSubcommands } from "./scripting.js";
import { setCommands } from "./sets.js";
import { stringCommands } from "./strings.js";
import { zsetCommands } from "./zsets.js";

export function buildCommandTable(): ReadonlyMap<string, CommandSpec> {
  const table = new Map<string, CommandSpec>();
  const all = [
    ...keyCommands,
    ...stringCommands,
    ...hashCommands,
    ...listCommands,
    ...setCommands,
    ...zsetCommands,
    ...scriptingCommands,
    ...pubsubCommands,
    // Blocking pops delegate to the commands above (LPOP, LMOVE…), looked up at run time.
    ...blockingCommands((name) => table.get(name)),
  ];
  for (const spec of all) {
    table.set(
      spec.name,
      spec.name === "script" ? { ...spec, subcommands: scriptSubcommands } : spec,
    );
  }
  return table;
}

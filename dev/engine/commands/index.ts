/** The command table: every command the embedded engine understands, by lower-case name. */
import type { CommandSpec } from "../context.js";
import { bitCommands } from "./bits.js";
import { blockingCommands } from "./blocking.js";
import { functionCommands } from "./functions.js";
import { geoCommands } from "./geo.js";
import { hashCommands } from "./hashes.js";
import { hyperLogLogCommands } from "./hyperloglog.js";
import { introspectionCommands } from "./introspection.js";
import { keyCommands } from "./keys.js";
import { listCommands, listMoveCommands } from "./lists.js";
import { pubsubCommands } from "./pubsub.js";
import { scriptingCommands, scriptSubcommands } from "./scripting.js";
import { setCommands } from "./sets.js";
import { streamCommands } from "./streams.js";
import { stringCommands } from "./strings.js";
import { zsetCommands } from "./zsets.js";

export function buildCommandTable(): ReadonlyMap<string, CommandSpec> {
  const table = new Map<string, CommandSpec>();
  const all = [
    ...keyCommands,
    ...stringCommands,
    ...bitCommands,
    ...hyperLogLogCommands,
    ...hashCommands,
    ...listCommands,
    ...listMoveCommands,
    ...setCommands,
    ...zsetCommands,
    ...geoCommands,
    ...streamCommands,
    ...introspectionCommands,
    ...scriptingCommands,
    ...functionCommands,
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

/**
 * Keeps three lists in step with the engine's command table: the per-family table of
 * docs/dev-server.md ("What the embedded engine emulates"), and the commands the differential
 * suite (differential*.test.ts) runs against a real redis-server.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { buildCommandTable } from "../../../../dev/engine/commands/index.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DOC = path.resolve(HERE, "../../../../docs/dev-server.md");

/** Commands the differential suite cannot run on a shared RESP connection, with the reason. */
const NOT_DIFFERENTIAL: Readonly<Record<string, string>> = {
  multi:
    "connection state: refused by the REST layer; transactions are /multi-exec (transactions.test.ts)",
  exec: "connection state: refused by the REST layer; transactions are /multi-exec (transactions.test.ts)",
  discard: "connection state: refused by the REST layer",
  watch: "connection state: refused by the REST layer",
  unwatch: "connection state: refused by the REST layer",
};

const engineCommands = [...buildCommandTable().keys()].sort();

/** Command names in the rows of the doc's emulation table (options in parentheses left out). */
function documentedCommands(): string[] {
  const doc = readFileSync(DOC, "utf8");
  const start = doc.indexOf("## What the embedded engine emulates");
  const section = doc.slice(start, doc.indexOf("\n## ", start + 1));
  const names = new Set<string>();
  for (const row of section.split("\n").filter((line) => line.startsWith("| "))) {
    const commandsCell = row.split(" | ")[1] ?? "";
    for (const match of commandsCell.replace(/\([^)]*\)/g, "").matchAll(/`([A-Z][A-Z_]*)[ `]/g)) {
      names.add(match[1]!.toLowerCase());
    }
  }
  return [...names].sort();
}

/** The first element of every command array in the differential test files. */
function differentialCommands(): Set<string> {
  const names = new Set<string>();
  for (const file of readdirSync(HERE).filter((name) => /^differential.*\.test\.ts$/.test(name))) {
    const text = readFileSync(path.join(HERE, file), "utf8");
    for (const match of text.matchAll(/\[\s*"([A-Za-z_]+)"/g)) names.add(match[1]!.toLowerCase());
  }
  return names;
}

describe("the engine's command table", () => {
  it("is the list docs/dev-server.md gives, family by family", () => {
    expect(documentedCommands()).toEqual(engineCommands);
  });

  it("is covered command by command by the differential suite", () => {
    const covered = differentialCommands();
    const uncovered = engineCommands.filter(
      (name) => !covered.has(name) && NOT_DIFFERENTIAL[name] === undefined,
    );
    expect(uncovered).toEqual([]);
    // An exception that is covered after all is stale.
    expect(Object.keys(NOT_DIFFERENTIAL).filter((name) => covered.has(name))).toEqual([]);
  });
});

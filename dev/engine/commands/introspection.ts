/**
 * OBJECT ENCODING and MEMORY USAGE, derived from the current value (the engine keeps no
 * encodings): the encoding Redis 7.0 would pick for a value built from scratch, and a rough byte
 * count.
 */
import type { Reply } from "../../backend.js";
import { asciiLower, isKeyword } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { Errors, fail } from "../errors.js";
import type { Value } from "../keyspace.js";
import { parseInt64 } from "../numbers.js";
import { R } from "../replies.js";
import { smallIntArg } from "./util.js";

/** Redis's listpack limits for small hashes and sorted sets (…-max-listpack-entries/value). */
const LISTPACK_ENTRIES = 128;
const LISTPACK_VALUE = 64;
const INTSET_ENTRIES = 512;
const EMBSTR_MAX = 44;

const isCanonicalInt = (text: string): boolean => {
  const value = parseInt64(text);
  return value !== null && String(value) === text;
};

function encodingOf(value: Value): string {
  switch (value.type) {
    case "string":
      if (isCanonicalInt(value.data)) return "int";
      return value.data.length <= EMBSTR_MAX ? "embstr" : "raw";
    case "hash": {
      const small =
        value.data.size <= LISTPACK_ENTRIES &&
        [...value.data].every(([f, v]) => f.length <= LISTPACK_VALUE && v.length <= LISTPACK_VALUE);
      return small ? "listpack" : "hashtable";
    }
    case "list":
      return "quicklist";
    case "set":
      return value.data.size <= INTSET_ENTRIES && [...value.data].every(isCanonicalInt)
        ? "intset"
        : "hashtable";
    case "zset": {
      const entries = value.data.entries();
      const small =
        entries.length <= LISTPACK_ENTRIES &&
        entries.every((e) => e.member.length <= LISTPACK_VALUE);
      return small ? "listpack" : "skiplist";
    }
    case "stream":
      return "stream";
  }
}

/** A rough size: the bytes of every element plus a fixed overhead per key and per element. */
function approximateBytes(key: string, value: Value): number {
  const perElement = 16;
  let bytes = 56 + key.length;
  const add = (text: string) => {
    bytes += text.length + perElement;
  };
  switch (value.type) {
    case "string":
      add(value.data);
      break;
    case "hash":
      for (const [field, v] of value.data) {
        add(field);
        add(v);
      }
      break;
    case "list":
    case "set":
      for (const item of value.data) add(item);
      break;
    case "zset":
      for (const entry of value.data.entries()) {
        add(entry.member);
        bytes += 8;
      }
      break;
    case "stream":
      for (const entry of value.data.entries) {
        bytes += 16;
        for (const text of entry.fields) add(text);
      }
      break;
  }
  return bytes;
}

function object(ctx: CommandContext, argv: readonly string[]): Reply {
  const sub = asciiLower(argv[1]!);
  if (sub === "help") {
    return R.array(
      [
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "HELP",
      ].map((line) => R.status(line)),
    );
  }
  const entry = ctx.db.lookup(argv[2]!, ctx.now());
  if (entry === undefined) return R.nil();
  if (sub === "encoding") return R.bulk(encodingOf(entry.value));
  return fail(`ERR OBJECT ${sub.toUpperCase()} is not supported by the embedded engine`);
}

function memory(ctx: CommandContext, argv: readonly string[]): Reply {
  const sub = asciiLower(argv[1]!);
  if (sub !== "usage") {
    return fail(`ERR MEMORY ${sub.toUpperCase()} is not supported by the embedded engine`);
  }
  for (let j = 3; j < argv.length; j++) {
    if (isKeyword(argv[j], "samples") && j + 1 < argv.length) smallIntArg(argv[++j]);
    else fail(Errors.syntax);
  }
  const key = argv[2]!;
  const entry = ctx.db.lookup(key, ctx.now());
  return entry === undefined ? R.nil() : R.int(approximateBytes(key, entry.value));
}

export const introspectionCommands: readonly CommandSpec[] = [
  {
    name: "object",
    arity: -2,
    subcommands: { encoding: 3, freq: 3, idletime: 3, refcount: 3, help: 2 },
    handler: object,
  },
  {
    name: "memory",
    arity: -2,
    subcommands: { usage: -3, doctor: 2, stats: 2, "malloc-stats": 2, purge: 2, help: 2 },
    handler: memory,
  },
];

/** Set commands. */
import type { Reply } from "../../backend.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { Errors, fail } from "../errors.js";
import { parseInt64 } from "../numbers.js";
import { R } from "../replies.js";
import {
  deleteIfEmpty,
  intArg,
  lookupOrCreate,
  lookupTyped,
  nonNegativeArg,
  randomPick,
  scanCollection,
  smallIntArg,
} from "./util.js";

const newSet = () => ({ type: "set" as const, data: new Set<string>() });

function getSet(ctx: CommandContext, key: string): Set<string> | undefined {
  return lookupTyped(ctx, key, "set")?.data;
}

/**
 * Small all-integer sets are intsets in Redis and come back sorted numerically; other sets come
 * back in hash order (unspecified), for which insertion order is as good as any.
 */
function members(set: Set<string>): string[] {
  const all = [...set];
  if (all.length > 512) return all;
  const numbers: bigint[] = [];
  for (const member of all) {
    const value = parseInt64(member);
    if (value === null) return all;
    numbers.push(value);
  }
  return numbers.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map(String);
}

function sadd(ctx: CommandContext, argv: readonly string[]): Reply {
  const set = lookupOrCreate(ctx, argv[1]!, "set", newSet);
  let added = 0;
  for (const member of argv.slice(2)) {
    if (!set.has(member)) {
      set.add(member);
      added++;
    }
  }
  return R.int(added);
}

function srem(ctx: CommandContext, argv: readonly string[]): Reply {
  const key = argv[1]!;
  const set = getSet(ctx, key);
  if (set === undefined) return R.int(0);
  let removed = 0;
  for (const member of argv.slice(2)) if (set.delete(member)) removed++;
  deleteIfEmpty(ctx, key, set.size);
  return R.int(removed);
}

type SetAlgebra = "inter" | "union" | "diff";

/** Looks every key up first (a missing key is an empty set; any other type is WRONGTYPE). */
function setsOf(ctx: CommandContext, keys: readonly string[]): (Set<string> | undefined)[] {
  return keys.map((key) => getSet(ctx, key));
}

function combine(op: SetAlgebra, sets: readonly (Set<string> | undefined)[]): Set<string> {
  if (op === "union") {
    const out = new Set<string>();
    for (const set of sets) for (const member of set ?? []) out.add(member);
    return out;
  }
  const [first, ...rest] = sets;
  if (op === "inter") {
    if (sets.some((set) => set === undefined || set.size === 0)) return new Set();
    // Redis walks the smallest set and probes the others.
    const ordered = [...(sets as Set<string>[])].sort((a, b) => a.size - b.size);
    const [smallest, ...others] = ordered;
    return new Set([...smallest!].filter((member) => others.every((set) => set.has(member))));
  }
  return new Set(
    [...(first ?? [])].filter((member) =>
      rest.every((set) => set === undefined || !set.has(member)),
    ),
  );
}

/** Replaces `key` with `set` (a fresh value, no TTL), or deletes it when the set is empty. */
function storeSet(ctx: CommandContext, key: string, set: Set<string>): Reply {
  if (set.size === 0) ctx.db.delete(key);
  else ctx.db.set(key, { type: "set", data: set });
  return R.int(set.size);
}

function algebraCommand(op: SetAlgebra, store: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const keys = argv.slice(store ? 2 : 1);
    const result = combine(op, setsOf(ctx, keys));
    return store ? storeSet(ctx, argv[1]!, result) : R.bulks(members(result));
  };
}

function sintercard(ctx: CommandContext, argv: readonly string[]): Reply {
  const numkeysMessage = "ERR numkeys should be greater than 0";
  const numkeys = smallIntArg(argv[1], numkeysMessage);
  if (numkeys <= 0) fail(numkeysMessage);
  if (numkeys > argv.length - 2) fail("ERR Number of keys can't be greater than number of args");
  let limit = 0;
  for (let j = 2 + numkeys; j < argv.length; j++) {
    if (argv[j]!.toLowerCase() === "limit" && j + 1 < argv.length) {
      limit = nonNegativeArg(argv[++j], "ERR LIMIT can't be negative");
    } else fail(Errors.syntax);
  }
  const size = combine("inter", setsOf(ctx, argv.slice(2, 2 + numkeys))).size;
  return R.int(limit > 0 ? Math.min(limit, size) : size);
}

function smove(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, from = "", to = "", member = ""] = argv;
  const source = getSet(ctx, from);
  if (source === undefined) return R.int(0);
  const target = getSet(ctx, to);
  if (from === to) return R.int(source.has(member));
  if (!source.delete(member)) return R.int(0);
  deleteIfEmpty(ctx, from, source.size);
  (target ?? lookupOrCreate(ctx, to, "set", newSet)).add(member);
  return R.int(1);
}

function spop(ctx: CommandContext, argv: readonly string[]): Reply {
  if (argv.length > 3) fail(Errors.syntax);
  const key = argv[1]!;
  const hasCount = argv.length === 3;
  const count = hasCount ? nonNegativeArg(argv[2]) : 1;
  const set = getSet(ctx, key);
  if (set === undefined) return hasCount ? R.array([]) : R.nil();
  const taken = randomPick([...set], count);
  for (const member of taken) set.delete(member);
  deleteIfEmpty(ctx, key, set.size);
  return hasCount ? R.bulks(taken) : R.bulk(taken[0]);
}

function srandmember(ctx: CommandContext, argv: readonly string[]): Reply {
  if (argv.length > 3) fail(Errors.syntax);
  const hasCount = argv.length === 3;
  const count = hasCount ? Number(intArg(argv[2])) : 1;
  const set = getSet(ctx, argv[1]!);
  if (set === undefined) return hasCount ? R.array([]) : R.nil();
  const picked = randomPick([...set], hasCount ? count : 1);
  return hasCount ? R.bulks(picked) : R.bulk(picked[0]);
}

function sscan(ctx: CommandContext, argv: readonly string[]): Reply {
  return scanCollection(
    argv,
    () => {
      const set = getSet(ctx, argv[1]!);
      return set === undefined ? undefined : members(set);
    },
    (member) => member,
    (member) => [member],
  );
}

export const setCommands: readonly CommandSpec[] = [
  { name: "sadd", arity: -3, write: true, handler: sadd },
  { name: "srem", arity: -3, write: true, handler: srem },
  {
    name: "smembers",
    arity: 2,
    handler: (ctx, argv) => R.bulks(members(getSet(ctx, argv[1]!) ?? new Set())),
  },
  {
    name: "sismember",
    arity: 3,
    handler: (ctx, argv) => R.int(getSet(ctx, argv[1]!)?.has(argv[2]!) ?? false),
  },
  {
    name: "smismember",
    arity: -3,
    handler: (ctx, argv) => {
      const set = getSet(ctx, argv[1]!);
      return R.array(argv.slice(2).map((member) => R.int(set?.has(member) ?? false)));
    },
  },
  { name: "scard", arity: 2, handler: (ctx, argv) => R.int(getSet(ctx, argv[1]!)?.size ?? 0) },
  { name: "sinter", arity: -2, handler: algebraCommand("inter", false) },
  { name: "sinterstore", arity: -3, write: true, handler: algebraCommand("inter", true) },
  { name: "sintercard", arity: -3, handler: sintercard },
  { name: "sunion", arity: -2, handler: algebraCommand("union", false) },
  { name: "sunionstore", arity: -3, write: true, handler: algebraCommand("union", true) },
  { name: "sdiff", arity: -2, handler: algebraCommand("diff", false) },
  { name: "sdiffstore", arity: -3, write: true, handler: algebraCommand("diff", true) },
  { name: "smove", arity: 4, write: true, handler: smove },
  { name: "spop", arity: -2, write: true, handler: spop },
  { name: "srandmember", arity: -2, handler: srandmember },
  { name: "sscan", arity: -3, handler: sscan },
];

/** Set commands. */
import type { Reply } from "../../backend.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { parseInt64 } from "../numbers.js";
import { R } from "../replies.js";
import { deleteIfEmpty, lookupOrCreate, lookupTyped } from "./util.js";

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
];

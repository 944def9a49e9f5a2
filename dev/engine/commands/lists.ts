/** List commands. */
import type { Reply } from "../../backend.js";
import { asciiLower } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { Errors, fail, wrongArity } from "../errors.js";
import { R } from "../replies.js";
import {
  clampRange,
  deleteIfEmpty,
  lookupOrCreate,
  lookupTyped,
  nonNegativeArg,
  smallIntArg,
} from "./util.js";

const newList = () => ({ type: "list" as const, data: [] as string[] });

function getList(ctx: CommandContext, key: string): string[] | undefined {
  return lookupTyped(ctx, key, "list")?.data;
}

const positiveArg = nonNegativeArg;

function pushCommand(left: boolean, onlyIfExists: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const key = argv[1]!;
    if (onlyIfExists && getList(ctx, key) === undefined) return R.int(0);
    const list = lookupOrCreate(ctx, key, "list", newList);
    for (const value of argv.slice(2)) {
      if (left) list.unshift(value);
      else list.push(value);
    }
    return R.int(list.length);
  };
}

function popCommand(name: string, left: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    if (argv.length > 3) fail(wrongArity(name));
    const hasCount = argv.length === 3;
    const count = hasCount ? positiveArg(argv[2]) : 1;
    const key = argv[1]!;
    const list = getList(ctx, key);
    if (list === undefined) return hasCount ? R.nilArray() : R.nil();
    if (hasCount && count === 0) return R.array([]);
    const taken = left
      ? list.splice(0, count)
      : list.splice(Math.max(0, list.length - count)).reverse();
    deleteIfEmpty(ctx, key, list.length);
    return hasCount ? R.bulks(taken) : R.bulk(taken[0]);
  };
}

function lrange(ctx: CommandContext, argv: readonly string[]): Reply {
  const start = smallIntArg(argv[2]);
  const stop = smallIntArg(argv[3]);
  const list = getList(ctx, argv[1]!);
  if (list === undefined) return R.array([]);
  const range = clampRange(start, stop, list.length);
  return R.bulks(range === null ? [] : list.slice(range.start, range.stop + 1));
}

function lindex(ctx: CommandContext, argv: readonly string[]): Reply {
  const list = getList(ctx, argv[1]!);
  if (list === undefined) return R.nil();
  const index = smallIntArg(argv[2]);
  return R.bulk(list[index < 0 ? list.length + index : index]);
}

function lset(ctx: CommandContext, argv: readonly string[]): Reply {
  const list = getList(ctx, argv[1]!);
  if (list === undefined) fail(Errors.noSuchKey);
  const index = smallIntArg(argv[2]);
  const at = index < 0 ? list.length + index : index;
  if (at < 0 || at >= list.length) fail("ERR index out of range");
  list[at] = argv[3]!;
  return R.ok();
}

function lrem(ctx: CommandContext, argv: readonly string[]): Reply {
  const count = smallIntArg(argv[2]);
  const key = argv[1]!;
  const element = argv[3]!;
  const list = getList(ctx, key);
  if (list === undefined) return R.int(0);
  let removed = 0;
  const limit = count === 0 ? Number.POSITIVE_INFINITY : Math.abs(count);
  if (count >= 0) {
    for (let i = 0; i < list.length && removed < limit; ) {
      if (list[i] === element) {
        list.splice(i, 1);
        removed++;
      } else i++;
    }
  } else {
    for (let i = list.length - 1; i >= 0 && removed < limit; i--) {
      if (list[i] === element) {
        list.splice(i, 1);
        removed++;
      }
    }
  }
  deleteIfEmpty(ctx, key, list.length);
  return R.int(removed);
}

function ltrim(ctx: CommandContext, argv: readonly string[]): Reply {
  const start = smallIntArg(argv[2]);
  const stop = smallIntArg(argv[3]);
  const key = argv[1]!;
  const list = getList(ctx, key);
  if (list === undefined) return R.ok();
  const range = clampRange(start, stop, list.length);
  const kept = range === null ? [] : list.slice(range.start, range.stop + 1);
  list.splice(0, list.length, ...kept);
  deleteIfEmpty(ctx, key, list.length);
  return R.ok();
}

function lpos(ctx: CommandContext, argv: readonly string[]): Reply {
  let rank = 1;
  let count = -1;
  let maxlen = 0;
  for (let j = 3; j < argv.length; j++) {
    const opt = asciiLower(argv[j]!);
    const hasMore = j + 1 < argv.length;
    if (opt === "rank" && hasMore) {
      rank = smallIntArg(argv[++j]);
      if (rank === 0) {
        fail(
          "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
        );
      }
    } else if (opt === "count" && hasMore) {
      count = positiveArg(argv[++j], "ERR COUNT can't be negative");
    } else if (opt === "maxlen" && hasMore) {
      maxlen = positiveArg(argv[++j], "ERR MAXLEN can't be negative");
    } else {
      fail(Errors.syntax);
    }
  }
  const list = getList(ctx, argv[1]!);
  if (list === undefined) return count !== -1 ? R.array([]) : R.nil();
  const element = argv[2]!;
  const fromTail = rank < 0;
  let skip = Math.abs(rank) - 1;
  const matches: number[] = [];
  const wanted = count === -1 ? 1 : count === 0 ? Number.POSITIVE_INFINITY : count;
  for (let scanned = 0; scanned < list.length && (maxlen === 0 || scanned < maxlen); scanned++) {
    const index = fromTail ? list.length - 1 - scanned : scanned;
    if (list[index] !== element) continue;
    if (skip > 0) {
      skip--;
      continue;
    }
    matches.push(index);
    if (matches.length >= wanted) break;
  }
  if (count === -1) return matches.length === 0 ? R.nil() : R.int(matches[0]!);
  return R.array(matches.map((index) => R.int(index)));
}

export const listCommands: readonly CommandSpec[] = [
  { name: "lpush", arity: -3, write: true, handler: pushCommand(true, false) },
  { name: "rpush", arity: -3, write: true, handler: pushCommand(false, false) },
  { name: "lpushx", arity: -3, write: true, handler: pushCommand(true, true) },
  { name: "rpushx", arity: -3, write: true, handler: pushCommand(false, true) },
  { name: "lpop", arity: -2, write: true, handler: popCommand("lpop", true) },
  { name: "rpop", arity: -2, write: true, handler: popCommand("rpop", false) },
  { name: "lrange", arity: 4, handler: lrange },
  { name: "llen", arity: 2, handler: (ctx, argv) => R.int(getList(ctx, argv[1]!)?.length ?? 0) },
  { name: "lindex", arity: 3, handler: lindex },
  { name: "lset", arity: 4, write: true, handler: lset },
  { name: "lrem", arity: 4, write: true, handler: lrem },
  { name: "ltrim", arity: 4, write: true, handler: ltrim },
  { name: "lpos", arity: -3, handler: lpos },
];

// ---- LMOVE, LMPOP, LINSERT ------------------------------------------------------------------

/** LEFT / RIGHT: true for the head. */
function sideArg(text: string): boolean {
  const side = asciiLower(text);
  if (side !== "left" && side !== "right") fail(Errors.syntax);
  return side === "left";
}

function takeFrom(list: string[], left: boolean, count: number): string[] {
  return left ? list.splice(0, count) : list.splice(Math.max(0, list.length - count)).reverse();
}

function moveElement(
  ctx: CommandContext,
  argv: readonly string[],
  fromLeft: boolean,
  toLeft: boolean,
): Reply {
  const [, from = "", to = ""] = argv;
  const source = getList(ctx, from);
  if (source === undefined) return R.nil();
  getList(ctx, to); // WRONGTYPE before anything moves
  const [element] = takeFrom(source, fromLeft, 1);
  deleteIfEmpty(ctx, from, source.length);
  const target = lookupOrCreate(ctx, to, "list", newList);
  if (toLeft) target.unshift(element!);
  else target.push(element!);
  return R.bulk(element);
}

function lmpop(ctx: CommandContext, argv: readonly string[]): Reply {
  const numkeysMessage = "ERR numkeys should be greater than 0";
  const numkeys = smallIntArg(argv[1], numkeysMessage);
  if (numkeys < 1) fail(numkeysMessage);
  const whereAt = 2 + numkeys;
  if (whereAt >= argv.length) fail(Errors.syntax);
  const left = sideArg(argv[whereAt]!);
  let count = -1;
  for (let j = whereAt + 1; j < argv.length; j++) {
    if (count === -1 && asciiLower(argv[j]!) === "count" && j + 1 < argv.length) {
      const countMessage = "ERR count should be greater than 0";
      count = smallIntArg(argv[++j], countMessage);
      if (count < 1) fail(countMessage);
    } else fail(Errors.syntax);
  }
  for (const key of argv.slice(2, whereAt)) {
    const list = getList(ctx, key);
    if (list === undefined) continue;
    const taken = takeFrom(list, left, count === -1 ? 1 : count);
    deleteIfEmpty(ctx, key, list.length);
    return R.array([R.bulk(key), R.bulks(taken)]);
  }
  return R.nilArray();
}

function linsert(ctx: CommandContext, argv: readonly string[]): Reply {
  const where = asciiLower(argv[2]!);
  if (where !== "before" && where !== "after") fail(Errors.syntax);
  const list = getList(ctx, argv[1]!);
  if (list === undefined) return R.int(0);
  const at = list.indexOf(argv[3]!);
  if (at < 0) return R.int(-1);
  list.splice(where === "before" ? at : at + 1, 0, argv[4]!);
  return R.int(list.length);
}

export const listMoveCommands: readonly CommandSpec[] = [
  {
    name: "lmove",
    arity: 5,
    write: true,
    handler: (ctx, argv) => moveElement(ctx, argv, sideArg(argv[3]!), sideArg(argv[4]!)),
  },
  {
    name: "rpoplpush",
    arity: 3,
    write: true,
    handler: (ctx, argv) => moveElement(ctx, argv, false, true),
  },
  { name: "lmpop", arity: -4, write: true, handler: lmpop },
  { name: "linsert", arity: 5, write: true, handler: linsert },
];

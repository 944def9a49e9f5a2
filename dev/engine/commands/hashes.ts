/** Hash commands. Field order is insertion order, which is what Redis's listpack encoding gives. */
import type { Reply } from "../../backend.js";
import { isKeyword } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { Errors, fail, wrongArity } from "../errors.js";
import {
  addLongDouble,
  formatLongDoubleHuman,
  isFiniteLongDouble,
  parseLongDouble,
} from "../longdouble.js";
import { inInt64Range, parseInt64 } from "../numbers.js";
import { R } from "../replies.js";
import {
  deleteIfEmpty,
  intArg,
  lookupOrCreate,
  lookupTyped,
  randomIndex,
  randomPick,
  scanCollection,
  smallIntArg,
} from "./util.js";

const newHash = () => ({ type: "hash" as const, data: new Map<string, string>() });

function getHash(ctx: CommandContext, key: string): Map<string, string> | undefined {
  return lookupTyped(ctx, key, "hash")?.data;
}

function hsetCommand(name: string, replyOk: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    if (argv.length % 2 === 1) fail(wrongArity(name));
    const hash = lookupOrCreate(ctx, argv[1]!, "hash", newHash);
    let created = 0;
    for (let i = 2; i < argv.length; i += 2) {
      if (!hash.has(argv[i]!)) created++;
      hash.set(argv[i]!, argv[i + 1]!);
    }
    return replyOk ? R.ok() : R.int(created);
  };
}

function hsetnx(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, key = "", field = "", value = ""] = argv;
  const hash = lookupOrCreate(ctx, key, "hash", newHash);
  if (hash.has(field)) return R.int(0);
  hash.set(field, value);
  return R.int(1);
}

function hdel(ctx: CommandContext, argv: readonly string[]): Reply {
  const key = argv[1]!;
  const hash = getHash(ctx, key);
  if (hash === undefined) return R.int(0);
  let removed = 0;
  for (const field of argv.slice(2)) if (hash.delete(field)) removed++;
  deleteIfEmpty(ctx, key, hash.size);
  return R.int(removed);
}

function hincrby(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, key = "", field = ""] = argv;
  const delta = intArg(argv[3]);
  const hash = lookupOrCreate(ctx, key, "hash", newHash);
  const current = hash.get(field);
  let value = 0n;
  if (current !== undefined) {
    const parsed = parseInt64(current);
    if (parsed === null) fail(Errors.hashNotInteger);
    value = parsed;
  }
  const next = value + delta;
  if (!inInt64Range(next)) fail(Errors.overflow);
  hash.set(field, String(next));
  return R.int(next);
}

function hincrbyfloat(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, key = "", field = ""] = argv;
  const delta = parseLongDouble(argv[3]!);
  if (delta === null) fail(Errors.notFloat);
  if (!isFiniteLongDouble(delta)) fail("ERR value is NaN or Infinity");
  const hash = lookupOrCreate(ctx, key, "hash", newHash);
  const current = hash.get(field);
  const value = current === undefined ? parseLongDouble("0") : parseLongDouble(current);
  if (value === null) fail(Errors.hashNotFloat);
  const next = addLongDouble(value, delta);
  if (!isFiniteLongDouble(next)) fail(Errors.nanOrInfinity);
  const text = formatLongDoubleHuman(next);
  hash.set(field, text);
  return R.bulk(text);
}

function hrandfield(ctx: CommandContext, argv: readonly string[]): Reply {
  const hasCount = argv.length >= 3;
  if (argv.length > 4 || (argv.length === 4 && !isKeyword(argv[3], "withvalues"))) {
    fail(Errors.syntax);
  }
  const count = hasCount ? smallIntArg(argv[2]) : 1;
  const hash = getHash(ctx, argv[1]!);
  if (hash === undefined) return hasCount ? R.array([]) : R.nil();
  const fields = [...hash.keys()];
  if (!hasCount) return R.bulk(fields[randomIndex(fields.length)]);
  const picked = randomPick(fields, count);
  const withValues = argv.length === 4;
  return R.bulks(withValues ? picked.flatMap((field) => [field, hash.get(field)!]) : picked);
}

function hscan(ctx: CommandContext, argv: readonly string[]): Reply {
  return scanCollection(
    argv,
    () => getHash(ctx, argv[1]!),
    ([field]) => field,
    ([field, value]) => [field, value],
  );
}

export const hashCommands: readonly CommandSpec[] = [
  { name: "hset", arity: -4, write: true, handler: hsetCommand("hset", false) },
  { name: "hmset", arity: -4, write: true, handler: hsetCommand("hmset", true) },
  { name: "hsetnx", arity: 4, write: true, handler: hsetnx },
  { name: "hget", arity: 3, handler: (ctx, argv) => R.bulk(getHash(ctx, argv[1]!)?.get(argv[2]!)) },
  {
    name: "hmget",
    arity: -3,
    handler: (ctx, argv) => {
      const hash = getHash(ctx, argv[1]!);
      return R.bulks(argv.slice(2).map((field) => hash?.get(field)));
    },
  },
  { name: "hdel", arity: -3, write: true, handler: hdel },
  {
    name: "hexists",
    arity: 3,
    handler: (ctx, argv) => R.int(getHash(ctx, argv[1]!)?.has(argv[2]!) ?? false),
  },
  { name: "hlen", arity: 2, handler: (ctx, argv) => R.int(getHash(ctx, argv[1]!)?.size ?? 0) },
  {
    name: "hstrlen",
    arity: 3,
    handler: (ctx, argv) => R.int(getHash(ctx, argv[1]!)?.get(argv[2]!)?.length ?? 0),
  },
  { name: "hrandfield", arity: -2, handler: hrandfield },
  { name: "hscan", arity: -3, handler: hscan },
  { name: "hincrby", arity: 4, write: true, handler: hincrby },
  { name: "hincrbyfloat", arity: 4, write: true, handler: hincrbyfloat },
  {
    name: "hgetall",
    arity: 2,
    handler: (ctx, argv) =>
      R.bulks([...(getHash(ctx, argv[1]!) ?? new Map<string, string>())].flat()),
  },
  {
    name: "hkeys",
    arity: 2,
    handler: (ctx, argv) => R.bulks([...(getHash(ctx, argv[1]!)?.keys() ?? [])]),
  },
  {
    name: "hvals",
    arity: 2,
    handler: (ctx, argv) => R.bulks([...(getHash(ctx, argv[1]!)?.values() ?? [])]),
  },
];

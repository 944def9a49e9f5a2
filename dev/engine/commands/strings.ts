/** String commands: GET, SET (all options), INCR family, APPEND, ... */
import type { Reply } from "../../backend.js";
import { asciiLower } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { Errors, fail, invalidExpireTime, wrongArity } from "../errors.js";
import type { Entry } from "../keyspace.js";
import {
  addLongDouble,
  formatLongDoubleHuman,
  isFiniteLongDouble,
  parseLongDouble,
} from "../longdouble.js";
import { INT64_MAX, INT64_MIN, inInt64Range, parseInt64 } from "../numbers.js";
import { R } from "../replies.js";
import { clampRange, intArg, lookupTyped, smallIntArg } from "./util.js";

function getString(ctx: CommandContext, key: string): string | undefined {
  return lookupTyped(ctx, key, "string")?.data;
}

/** Writes a string value; keeps the existing expiry only when asked (SET KEEPTTL, INCR, APPEND). */
function putString(ctx: CommandContext, key: string, data: string, keepTtl: boolean): Entry {
  return ctx.db.set(key, { type: "string", data }, keepTtl);
}

interface SetOptions {
  nx: boolean;
  xx: boolean;
  get: boolean;
  keepTtl: boolean;
  expire?: { unit: "ex" | "px" | "exat" | "pxat"; value: string };
}

/** Mirrors Redis's option parser, including which repeats and combinations it tolerates. */
function parseSetOptions(argv: readonly string[]): SetOptions {
  const o: SetOptions = { nx: false, xx: false, get: false, keepTtl: false };
  for (let j = 3; j < argv.length; j++) {
    const opt = asciiLower(argv[j]!);
    const next = argv[j + 1];
    const unit = o.expire?.unit;
    if (opt === "nx" && !o.xx) o.nx = true;
    else if (opt === "xx" && !o.nx) o.xx = true;
    else if (opt === "get") o.get = true;
    else if (opt === "keepttl" && unit === undefined) o.keepTtl = true;
    else if (
      (opt === "ex" || opt === "px" || opt === "exat" || opt === "pxat") &&
      next !== undefined &&
      !o.keepTtl &&
      (unit === undefined || unit === opt)
    ) {
      o.expire = { unit: opt, value: next };
      j++;
    } else {
      fail(Errors.syntax);
    }
  }
  return o;
}

/** Absolute expiry in ms for SET/GETEX options, with Redis's validation. */
function expireAtFromOption(
  ctx: CommandContext,
  name: string,
  option: { unit: "ex" | "px" | "exat" | "pxat"; value: string },
): number {
  let ms = intArg(option.value);
  const seconds = option.unit === "ex" || option.unit === "exat";
  if (ms <= 0n || (seconds && ms > INT64_MAX / 1000n)) fail(invalidExpireTime(name));
  if (seconds) ms *= 1000n;
  if (option.unit === "ex" || option.unit === "px") {
    ms += BigInt(ctx.now());
    if (ms > INT64_MAX) fail(invalidExpireTime(name));
  }
  return Number(ms);
}

function set(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, key = "", value = ""] = argv;
  const o = parseSetOptions(argv);
  const expireAt = o.expire ? expireAtFromOption(ctx, "set", o.expire) : undefined;
  let reply: Reply = R.ok();
  if (o.get) reply = R.bulk(getString(ctx, key));
  const found = ctx.db.lookup(key, ctx.now()) !== undefined;
  if ((o.nx && found) || (o.xx && !found)) return o.get ? reply : R.nil();
  const entry = putString(ctx, key, value, o.keepTtl);
  if (expireAt !== undefined) ctx.db.setExpire(key, entry, expireAt);
  return reply;
}

function setWithTtl(name: string, unit: "ex" | "px") {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const [, key = "", ttl = "", value = ""] = argv;
    const expireAt = expireAtFromOption(ctx, name, { unit, value: ttl });
    ctx.db.setExpire(key, putString(ctx, key, value, false), expireAt);
    return R.ok();
  };
}

function setnx(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, key = "", value = ""] = argv;
  if (ctx.db.lookup(key, ctx.now()) !== undefined) return R.int(0);
  putString(ctx, key, value, false);
  return R.int(1);
}

function get(ctx: CommandContext, argv: readonly string[]): Reply {
  return R.bulk(getString(ctx, argv[1]!));
}

function getdel(ctx: CommandContext, argv: readonly string[]): Reply {
  const value = getString(ctx, argv[1]!);
  if (value !== undefined) ctx.db.delete(argv[1]!);
  return R.bulk(value);
}

function getset(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, key = "", value = ""] = argv;
  const old = getString(ctx, key);
  putString(ctx, key, value, false);
  return R.bulk(old);
}

function getex(ctx: CommandContext, argv: readonly string[]): Reply {
  const key = argv[1]!;
  let expire: { unit: "ex" | "px" | "exat" | "pxat"; value: string } | undefined;
  let persistKey = false;
  for (let j = 2; j < argv.length; j++) {
    const opt = asciiLower(argv[j]!);
    const next = argv[j + 1];
    if (opt === "persist" && expire === undefined) persistKey = true;
    else if (
      (opt === "ex" || opt === "px" || opt === "exat" || opt === "pxat") &&
      next !== undefined &&
      !persistKey &&
      (expire === undefined || expire.unit === opt)
    ) {
      expire = { unit: opt, value: next };
      j++;
    } else fail(Errors.syntax);
  }
  const expireAt = expire ? expireAtFromOption(ctx, "getex", expire) : undefined;
  const found = lookupTyped(ctx, key, "string");
  if (found === undefined) return R.nil();
  if (expireAt !== undefined) {
    if (expireAt <= ctx.now()) ctx.db.delete(key);
    else ctx.db.setExpire(key, found.entry, expireAt);
  } else if (persistKey) {
    ctx.db.setExpire(key, found.entry, undefined);
  }
  return R.bulk(found.data);
}

function mget(ctx: CommandContext, argv: readonly string[]): Reply {
  const now = ctx.now();
  // MGET never fails with WRONGTYPE: non-string keys read as nil.
  return R.bulks(
    argv.slice(1).map((key) => {
      const value = ctx.db.lookup(key, now)?.value;
      return value?.type === "string" ? value.data : null;
    }),
  );
}

function mset(ctx: CommandContext, argv: readonly string[]): Reply {
  if (argv.length % 2 === 0) fail(wrongArity("mset"));
  for (let i = 1; i < argv.length; i += 2) putString(ctx, argv[i]!, argv[i + 1]!, false);
  return R.ok();
}

function msetnx(ctx: CommandContext, argv: readonly string[]): Reply {
  if (argv.length % 2 === 0) fail(wrongArity("msetnx"));
  const now = ctx.now();
  for (let i = 1; i < argv.length; i += 2) {
    if (ctx.db.lookup(argv[i]!, now) !== undefined) return R.int(0);
  }
  for (let i = 1; i < argv.length; i += 2) putString(ctx, argv[i]!, argv[i + 1]!, false);
  return R.int(1);
}

/** INCR/DECR/INCRBY/DECRBY share this; the TTL is preserved like in Redis. */
function incrementBy(ctx: CommandContext, key: string, delta: bigint): Reply {
  const current = getString(ctx, key);
  let value = 0n;
  if (current !== undefined) {
    const parsed = parseInt64(current);
    if (parsed === null) fail(Errors.notInteger);
    value = parsed;
  }
  const next = value + delta;
  if (!inInt64Range(next)) fail(Errors.overflow);
  putString(ctx, key, String(next), true);
  return R.int(next);
}

function incrbyfloat(ctx: CommandContext, argv: readonly string[]): Reply {
  const key = argv[1]!;
  const current = getString(ctx, key);
  const value = current === undefined ? parseLongDouble("0") : parseLongDouble(current);
  const delta = parseLongDouble(argv[2]!);
  if (value === null || delta === null) fail(Errors.notFloat);
  const next = addLongDouble(value, delta);
  if (!isFiniteLongDouble(next)) fail(Errors.nanOrInfinity);
  const text = formatLongDoubleHuman(next);
  putString(ctx, key, text, true);
  return R.bulk(text);
}

function append(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, key = "", value = ""] = argv;
  const next = (getString(ctx, key) ?? "") + value;
  putString(ctx, key, next, true);
  return R.int(next.length);
}

function strlen(ctx: CommandContext, argv: readonly string[]): Reply {
  return R.int(getString(ctx, argv[1]!)?.length ?? 0);
}

function getrange(ctx: CommandContext, argv: readonly string[]): Reply {
  const start = smallIntArg(argv[2]);
  const end = smallIntArg(argv[3]);
  const value = getString(ctx, argv[1]!) ?? "";
  if (start < 0 && end < 0 && start > end) return R.bulk("");
  const range = clampRange(start, end < 0 ? Math.max(0, value.length + end) : end, value.length);
  return R.bulk(range === null ? "" : value.slice(range.start, range.stop + 1));
}

/** Redis's proto-max-bulk-len: no string may grow beyond 512 MB. */
const MAX_STRING_BYTES = 512 * 1024 * 1024;

function setrange(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, key = "", , patch = ""] = argv;
  const offset = smallIntArg(argv[2]);
  if (offset < 0) fail("ERR offset is out of range");
  const current = getString(ctx, key);
  // An empty patch never creates or grows the key.
  if (patch.length === 0) return R.int(current?.length ?? 0);
  if (offset + patch.length > MAX_STRING_BYTES) {
    fail("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
  }
  const base = (current ?? "").padEnd(offset, "\0");
  const next = base.slice(0, offset) + patch + base.slice(offset + patch.length);
  putString(ctx, key, next, true);
  return R.int(next.length);
}

/** LCS: Redis's dynamic-programming table and its backward walk, ranges included. */
function lcs(ctx: CommandContext, argv: readonly string[]): Reply {
  let wantLen = false;
  let wantIdx = false;
  let withMatchLen = false;
  let minMatchLen = 0;
  for (let j = 3; j < argv.length; j++) {
    const opt = asciiLower(argv[j]!);
    if (opt === "idx") wantIdx = true;
    else if (opt === "len") wantLen = true;
    else if (opt === "withmatchlen") withMatchLen = true;
    else if (opt === "minmatchlen" && j + 1 < argv.length) {
      minMatchLen = Math.max(0, smallIntArg(argv[++j]));
    } else fail(Errors.syntax);
  }
  const values = [argv[1]!, argv[2]!].map((key) => {
    const value = ctx.db.lookup(key, ctx.now())?.value;
    if (value !== undefined && value.type !== "string") {
      fail("ERR The specified keys must contain string values");
    }
    return value?.data ?? "";
  });
  const [a, b] = values as [string, string];
  if (wantLen && wantIdx) fail("ERR If you want both the length and indexes, please just use IDX.");
  const width = b.length + 1;
  const table = new Uint32Array((a.length + 1) * width);
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      table[i * width + j] =
        a[i - 1] === b[j - 1]
          ? table[(i - 1) * width + j - 1]! + 1
          : Math.max(table[(i - 1) * width + j]!, table[i * width + j - 1]!);
    }
  }
  const length = table[a.length * width + b.length]!;
  if (wantLen) return R.int(length);
  const chars: string[] = [];
  const ranges: Reply[] = [];
  let aStart = a.length;
  let aEnd = 0;
  let bStart = 0;
  let bEnd = 0;
  let i = a.length;
  let j = b.length;
  while (i > 0 && j > 0) {
    let emit = false;
    if (a[i - 1] === b[j - 1]) {
      chars.push(a[i - 1]!);
      if (aStart === a.length) {
        aStart = aEnd = i - 1;
        bStart = bEnd = j - 1;
      } else if (aStart === i && bStart === j) {
        aStart--;
        bStart--;
      } else emit = true;
      if (aStart === 0 || bStart === 0) emit = true;
      i--;
      j--;
    } else {
      if (table[(i - 1) * width + j]! > table[i * width + j - 1]!) i--;
      else j--;
      if (aStart !== a.length) emit = true;
    }
    const matchLen = aEnd - aStart + 1;
    if (emit) {
      if (minMatchLen === 0 || matchLen >= minMatchLen) {
        const range: Reply[] = [
          R.array([R.int(aStart), R.int(aEnd)]),
          R.array([R.int(bStart), R.int(bEnd)]),
        ];
        if (withMatchLen) range.push(R.int(matchLen));
        ranges.push(R.array(range));
      }
      aStart = a.length;
    }
  }
  if (!wantIdx) return R.bulk(chars.reverse().join(""));
  return R.array([R.bulk("matches"), R.array(ranges), R.bulk("len"), R.int(length)]);
}

export const stringCommands: readonly CommandSpec[] = [
  { name: "get", arity: 2, handler: get },
  { name: "set", arity: -3, write: true, handler: set },
  { name: "setnx", arity: 3, write: true, handler: setnx },
  { name: "setex", arity: 4, write: true, handler: setWithTtl("setex", "ex") },
  { name: "psetex", arity: 4, write: true, handler: setWithTtl("psetex", "px") },
  { name: "getdel", arity: 2, write: true, handler: getdel },
  { name: "getset", arity: 3, write: true, handler: getset },
  { name: "getex", arity: -2, write: true, handler: getex },
  { name: "mget", arity: -2, handler: mget },
  { name: "mset", arity: -3, write: true, handler: mset },
  { name: "msetnx", arity: -3, write: true, handler: msetnx },
  { name: "incr", arity: 2, write: true, handler: (ctx, argv) => incrementBy(ctx, argv[1]!, 1n) },
  { name: "decr", arity: 2, write: true, handler: (ctx, argv) => incrementBy(ctx, argv[1]!, -1n) },
  {
    name: "incrby",
    arity: 3,
    write: true,
    handler: (ctx, argv) => incrementBy(ctx, argv[1]!, intArg(argv[2])),
  },
  {
    name: "decrby",
    arity: 3,
    write: true,
    handler: (ctx, argv) => {
      const delta = intArg(argv[2]);
      if (delta === INT64_MIN) fail("ERR decrement would overflow");
      return incrementBy(ctx, argv[1]!, -delta);
    },
  },
  { name: "incrbyfloat", arity: 3, write: true, handler: incrbyfloat },
  { name: "append", arity: 3, write: true, handler: append },
  { name: "strlen", arity: 2, handler: strlen },
  { name: "getrange", arity: 4, handler: getrange },
  { name: "substr", arity: 4, handler: getrange },
  { name: "setrange", arity: 4, write: true, handler: setrange },
  { name: "lcs", arity: -3, handler: lcs },
];

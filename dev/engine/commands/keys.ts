/** Keyspace and server commands: DEL, EXISTS, TYPE, KEYS, SCAN, expiry, RENAME, PING, TIME, ... */
import type { Reply } from "../../backend.js";
import { isKeyword } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { Errors, fail, invalidExpireTime, wrongArity } from "../errors.js";
import { globMatch } from "../glob.js";
import { cloneValue } from "../keyspace.js";
import { INT64_MAX, INT64_MIN } from "../numbers.js";
import { R } from "../replies.js";
import { intArg, randomIndex, scanCursorArg, scanOptions, scanReply } from "./util.js";

function del(ctx: CommandContext, argv: readonly string[]): Reply {
  let removed = 0;
  for (const key of argv.slice(1)) {
    if (ctx.db.lookup(key, ctx.now()) !== undefined && ctx.db.delete(key)) removed++;
  }
  return R.int(removed);
}

function exists(ctx: CommandContext, argv: readonly string[]): Reply {
  let count = 0;
  for (const key of argv.slice(1)) if (ctx.db.lookup(key, ctx.now()) !== undefined) count++;
  return R.int(count);
}

function type(ctx: CommandContext, argv: readonly string[]): Reply {
  const entry = ctx.db.lookup(argv[1]!, ctx.now());
  return R.status(entry === undefined ? "none" : entry.value.type);
}

function keys(ctx: CommandContext, argv: readonly string[]): Reply {
  const pattern = argv[1]!;
  const all = pattern === "*";
  const out: string[] = [];
  for (const key of ctx.db.keys(ctx.now())) if (all || globMatch(pattern, key)) out.push(key);
  return R.bulks(out);
}

/** SCAN returns every matching key on the first call (cursor 0) and cursor 0 to end iteration. */
function scan(ctx: CommandContext, argv: readonly string[]): Reply {
  const cursor = scanCursorArg(argv[1]!);
  const { pattern, type: typeFilter } = scanOptions(argv, 2, true);
  const now = ctx.now();
  const keys = cursor === 0n ? ctx.db.keys(now) : [];
  const typed = (key: string) =>
    typeFilter === undefined || ctx.db.lookup(key, now)?.value.type === typeFilter;
  return scanReply(
    [...keys].filter(typed),
    pattern,
    (key) => key,
    (key) => [key],
  );
}

function dbsize(ctx: CommandContext): Reply {
  return R.int(ctx.db.size(ctx.now()));
}

function flush(ctx: CommandContext, argv: readonly string[]): Reply {
  if (
    argv.length > 2 ||
    (argv.length === 2 && !isKeyword(argv[1], "async") && !isKeyword(argv[1], "sync"))
  ) {
    fail(Errors.syntax);
  }
  ctx.db.flush();
  return R.ok();
}

/** Shared by EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT. */
function expireCommand(name: string, unitMs: 1n | 1000n, relative: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const flags = new Set<string>();
    for (const option of argv.slice(3)) {
      const lower = option.toLowerCase();
      if (lower !== "nx" && lower !== "xx" && lower !== "gt" && lower !== "lt") {
        fail(`ERR Unsupported option ${option}`);
      }
      flags.add(lower);
    }
    if (flags.has("nx") && (flags.has("xx") || flags.has("gt") || flags.has("lt"))) {
      fail("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if (flags.has("gt") && flags.has("lt")) {
      fail("ERR GT and LT options at the same time are not compatible");
    }
    let when = intArg(argv[2]);
    if (unitMs === 1000n) {
      if (when > INT64_MAX / 1000n || when < INT64_MIN / 1000n) fail(invalidExpireTime(name));
      when *= 1000n;
    }
    const now = ctx.now();
    const base = relative ? BigInt(now) : 0n;
    if (when > INT64_MAX - base) fail(invalidExpireTime(name));
    when += base;

    const key = argv[1]!;
    const entry = ctx.db.lookup(key, now);
    if (entry === undefined) return R.int(0);
    const current = entry.expireAt;
    if (flags.has("nx") && current !== undefined) return R.int(0);
    if (flags.has("xx") && current === undefined) return R.int(0);
    // No expiry counts as an infinite TTL: GT never applies to it, LT always does.
    if (flags.has("gt") && (current === undefined || when <= BigInt(current))) return R.int(0);
    if (flags.has("lt") && current !== undefined && when >= BigInt(current)) return R.int(0);

    if (when <= BigInt(now)) {
      ctx.db.delete(key);
    } else {
      ctx.db.setExpire(key, entry, Number(when));
    }
    return R.int(1);
  };
}

function ttlCommand(ms: boolean, absolute: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const now = ctx.now();
    const entry = ctx.db.lookup(argv[1]!, now);
    if (entry === undefined) return R.int(-2);
    if (entry.expireAt === undefined) return R.int(-1);
    let ttl = absolute ? entry.expireAt : entry.expireAt - now;
    if (ttl < 0) ttl = 0;
    if (absolute && !ms) return R.int(Math.floor((ttl + 500) / 1000));
    return R.int(ms ? ttl : Math.floor((ttl + 500) / 1000));
  };
}

function persist(ctx: CommandContext, argv: readonly string[]): Reply {
  const key = argv[1]!;
  const entry = ctx.db.lookup(key, ctx.now());
  if (entry === undefined || entry.expireAt === undefined) return R.int(0);
  ctx.db.setExpire(key, entry, undefined);
  return R.int(1);
}

function renameCommand(nx: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const [, from = "", to = ""] = argv;
    const now = ctx.now();
    const source = ctx.db.lookup(from, now);
    if (source === undefined) fail(Errors.noSuchKey);
    if (from === to) return nx ? R.int(0) : R.ok();
    if (ctx.db.lookup(to, now) !== undefined) {
      if (nx) return R.int(0);
      ctx.db.delete(to);
    }
    const moved = ctx.db.set(to, source.value);
    ctx.db.setExpire(to, moved, source.expireAt);
    ctx.db.delete(from);
    return nx ? R.int(1) : R.ok();
  };
}

function copy(ctx: CommandContext, argv: readonly string[]): Reply {
  const [, from = "", to = ""] = argv;
  let replace = false;
  for (let j = 3; j < argv.length; j++) {
    if (isKeyword(argv[j], "replace")) replace = true;
    else if (isKeyword(argv[j], "db") && j + 1 < argv.length) {
      // The engine has one database: DB 0 is accepted, any other index is refused.
      if (intArg(argv[++j]) !== 0n) fail("ERR DB index is out of range");
    } else fail(Errors.syntax);
  }
  if (from === to) fail("ERR source and destination objects are the same");
  const now = ctx.now();
  const source = ctx.db.lookup(from, now);
  if (source === undefined) return R.int(0);
  if (ctx.db.lookup(to, now) !== undefined) {
    if (!replace) return R.int(0);
    ctx.db.delete(to);
  }
  const copied = ctx.db.set(to, cloneValue(source.value));
  ctx.db.setExpire(to, copied, source.expireAt);
  return R.int(1);
}

/** RANDOMKEY: a uniformly chosen live key, or nil on an empty database. */
function randomkey(ctx: CommandContext): Reply {
  const keys = [...ctx.db.keys(ctx.now())];
  return R.bulk(keys.length === 0 ? null : keys[randomIndex(keys.length)]);
}

function ping(_ctx: CommandContext, argv: readonly string[]): Reply {
  if (argv.length > 2) fail(wrongArity("ping"));
  return argv.length === 2 ? R.bulk(argv[1]) : R.status("PONG");
}

function time(ctx: CommandContext): Reply {
  const micros = ctx.nowMicros();
  return R.bulks([String(micros / 1_000_000n), String(micros % 1_000_000n)]);
}

export const keyCommands: readonly CommandSpec[] = [
  { name: "del", arity: -2, write: true, handler: del },
  { name: "unlink", arity: -2, write: true, handler: del },
  { name: "exists", arity: -2, handler: exists },
  { name: "touch", arity: -2, handler: exists },
  { name: "copy", arity: -3, write: true, handler: copy },
  { name: "randomkey", arity: 1, handler: randomkey },
  { name: "type", arity: 2, handler: type },
  { name: "keys", arity: 2, handler: keys },
  { name: "scan", arity: -2, handler: scan },
  { name: "dbsize", arity: 1, handler: dbsize },
  { name: "flushdb", arity: -1, write: true, handler: flush },
  { name: "flushall", arity: -1, write: true, handler: flush },
  { name: "expire", arity: -3, write: true, handler: expireCommand("expire", 1000n, true) },
  { name: "pexpire", arity: -3, write: true, handler: expireCommand("pexpire", 1n, true) },
  { name: "expireat", arity: -3, write: true, handler: expireCommand("expireat", 1000n, false) },
  { name: "pexpireat", arity: -3, write: true, handler: expireCommand("pexpireat", 1n, false) },
  { name: "ttl", arity: 2, handler: ttlCommand(false, false) },
  { name: "pttl", arity: 2, handler: ttlCommand(true, false) },
  { name: "expiretime", arity: 2, handler: ttlCommand(false, true) },
  { name: "pexpiretime", arity: 2, handler: ttlCommand(true, true) },
  { name: "persist", arity: 2, write: true, handler: persist },
  { name: "rename", arity: 3, write: true, handler: renameCommand(false) },
  { name: "renamenx", arity: 3, write: true, handler: renameCommand(true) },
  { name: "ping", arity: -1, handler: ping },
  { name: "echo", arity: 2, handler: (_ctx, argv) => R.bulk(argv[1]) },
  { name: "time", arity: 1, handler: time },
];

/**
 * Where each command's keys are among its arguments, as Redis 7's key specs say. The `upstash`
 * profile needs them twice: to enforce `allow-key-locking` (every key a script touches must be in
 * its KEYS) and to apply Upstash's key-size limit. A command missing here is refused inside an
 * `allow-key-locking` script (its keys cannot be checked) and is never size-checked.
 * `test/node/dev/upstash-profile.test.ts` checks the table against a real redis-server's
 * `COMMAND GETKEYS`.
 */
import type { Command, CommandArg } from "../backend.js";

export type KeySpec =
  /** Keys at argument positions first, first+step, … up to last (negative: from the end). */
  | { readonly kind: "range"; readonly first: number; readonly last: number; readonly step: number }
  /** `leading` fixed keys (positions 1..leading), then a key count at `at` and that many keys. */
  | { readonly kind: "numkeys"; readonly at: number; readonly leading: number }
  /** XREAD/XREADGROUP: after `STREAMS`, the first half of the remaining arguments. */
  | { readonly kind: "streams" }
  /** No keys at all (TIME, PUBLISH…). */
  | { readonly kind: "none" };

const range = (first: number, last: number, step = 1): KeySpec => ({
  kind: "range",
  first,
  last,
  step,
});
const numkeys = (at: number, leading = 0): KeySpec => ({ kind: "numkeys", at, leading });

function table(entries: Readonly<Record<string, readonly string[]>>, spec: KeySpec) {
  return Object.fromEntries(
    Object.values(entries)
      .flat()
      .map((name) => [name, spec]),
  );
}

/** Commands with one key, the first argument. */
const SINGLE_KEY = {
  strings: [
    "get",
    "set",
    "setnx",
    "setex",
    "psetex",
    "getset",
    "getdel",
    "getex",
    "append",
    "strlen",
    "getrange",
    "substr",
    "setrange",
    "incr",
    "decr",
    "incrby",
    "decrby",
    "incrbyfloat",
    "setbit",
    "getbit",
    "bitcount",
    "bitpos",
    "bitfield",
    "bitfield_ro",
  ],
  keys: [
    "type",
    "expire",
    "pexpire",
    "expireat",
    "pexpireat",
    "ttl",
    "pttl",
    "expiretime",
    "pexpiretime",
    "persist",
    "dump",
    "restore",
  ],
  hashes: [
    "hset",
    "hmset",
    "hsetnx",
    "hget",
    "hmget",
    "hdel",
    "hexists",
    "hlen",
    "hstrlen",
    "hincrby",
    "hincrbyfloat",
    "hgetall",
    "hkeys",
    "hvals",
    "hrandfield",
    "hscan",
  ],
  lists: [
    "lpush",
    "rpush",
    "lpushx",
    "rpushx",
    "lpop",
    "rpop",
    "lrange",
    "llen",
    "lindex",
    "lset",
    "lrem",
    "ltrim",
    "lpos",
    "linsert",
  ],
  sets: [
    "sadd",
    "srem",
    "smembers",
    "sismember",
    "smismember",
    "scard",
    "spop",
    "srandmember",
    "sscan",
  ],
  zsets: [
    "zadd",
    "zincrby",
    "zrem",
    "zscore",
    "zmscore",
    "zrank",
    "zrevrank",
    "zcard",
    "zcount",
    "zlexcount",
    "zrange",
    "zrevrange",
    "zrangebyscore",
    "zrevrangebyscore",
    "zrangebylex",
    "zrevrangebylex",
    "zremrangebyscore",
    "zremrangebylex",
    "zremrangebyrank",
    "zpopmin",
    "zpopmax",
    "zrandmember",
    "zscan",
  ],
  other: [
    "pfadd",
    "geoadd",
    "geopos",
    "geohash",
    "geodist",
    "geosearch",
    "xadd",
    "xrange",
    "xrevrange",
    "xlen",
    "xdel",
    "xtrim",
    "xack",
    "xpending",
    "xclaim",
    "xautoclaim",
  ],
} as const;

/** Every key from the first argument on. */
const ALL_KEYS = {
  keys: ["del", "unlink", "exists", "touch", "mget"],
  sets: ["sinter", "sunion", "sdiff", "sinterstore", "sunionstore", "sdiffstore"],
  other: ["pfcount", "pfmerge"],
} as const;

/** Source and destination. */
const TWO_KEYS = {
  all: [
    "rename",
    "renamenx",
    "copy",
    "lmove",
    "rpoplpush",
    "smove",
    "zrangestore",
    "geosearchstore",
    "lcs",
  ],
} as const;

export const KEY_SPECS: Readonly<Record<string, KeySpec>> = {
  ...table(SINGLE_KEY, range(1, 1)),
  ...table(ALL_KEYS, range(1, -1)),
  ...table(TWO_KEYS, range(1, 2)),
  mset: range(1, -1, 2),
  msetnx: range(1, -1, 2),
  bitop: range(2, -1),
  // XGROUP CREATE key …, XINFO STREAM key …: the key follows the subcommand.
  xgroup: range(2, 2),
  xinfo: range(2, 2),
  zunionstore: numkeys(2, 1),
  zinterstore: numkeys(2, 1),
  zdiffstore: numkeys(2, 1),
  zunion: numkeys(1),
  zinter: numkeys(1),
  zdiff: numkeys(1),
  zintercard: numkeys(1),
  sintercard: numkeys(1),
  lmpop: numkeys(1),
  zmpop: numkeys(1),
  eval: numkeys(2),
  evalsha: numkeys(2),
  eval_ro: numkeys(2),
  evalsha_ro: numkeys(2),
  fcall: numkeys(2),
  fcall_ro: numkeys(2),
  xread: { kind: "streams" },
  xreadgroup: { kind: "streams" },
  time: { kind: "none" },
  ping: { kind: "none" },
  echo: { kind: "none" },
  publish: { kind: "none" },
};

/**
 * Inside an `allow-key-locking` script the profile holds a channel to the rule for keys: it must
 * be one of the script's KEYS. Upstash documents the rule for keys only; whether its engine treats
 * a channel alike is unknown, so the profile takes the stricter reading (docs/upstash.md). Redis
 * itself names no key for PUBLISH (COMMAND GETKEYS), which commandKeys keeps.
 */
const CHANNEL_AS_KEY_IN_SCRIPTS: Readonly<Record<string, KeySpec>> = {
  publish: range(1, 1),
};

/** Commands a script may not call at all: the Lua table leaves them out. */
const NOT_FROM_SCRIPTS = new Set(["eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"]);

const text = (arg: CommandArg) =>
  typeof arg === "string" ? arg : Buffer.from(arg).toString("latin1");

/**
 * The key arguments of `command` (name first), or undefined when its keys are unknown here.
 * Malformed calls (too few arguments) yield what is there; Redis reports the arity itself.
 */
export function commandKeys(command: Command): CommandArg[] | undefined {
  const name = command[0] === undefined ? "" : text(command[0]).toLowerCase();
  const spec = KEY_SPECS[name];
  if (spec === undefined) return undefined;
  const argc = command.length;
  switch (spec.kind) {
    case "none":
      return [];
    case "range": {
      const last = spec.last < 0 ? argc + spec.last : spec.last;
      const keys: CommandArg[] = [];
      for (let i = spec.first; i <= last && i < argc; i += spec.step) keys.push(command[i]!);
      return keys;
    }
    case "numkeys": {
      const keys = command.slice(1, 1 + spec.leading);
      const count = Number(text(command[spec.at] ?? "0"));
      if (!Number.isSafeInteger(count) || count < 0) return keys;
      return [...keys, ...command.slice(spec.at + 1, spec.at + 1 + count)];
    }
    case "streams": {
      const at = command.findIndex((arg, i) => i > 0 && text(arg).toLowerCase() === "streams");
      if (at < 0) return [];
      const rest = command.slice(at + 1);
      return rest.slice(0, Math.floor(rest.length / 2));
    }
  }
}

function luaSpec(spec: KeySpec): string {
  if (spec.kind === "range") return `r:${spec.first}:${spec.last}:${spec.step}`;
  if (spec.kind === "numkeys") return `n:${spec.at}:${spec.leading}`;
  return spec.kind === "streams" ? "s" : "x";
}

/**
 * The table as one Lua string, ` get:r:1:1:1 mset:r:1:-1:2 zunionstore:n:2:1 …`, for the key check
 * injected into `allow-key-locking` scripts. A string constant is built once, when the script is
 * compiled; a table constructor would be rebuilt on every run (30 µs per script on Redis 7).
 */
export function luaKeySpecText(): string {
  const entries = Object.entries({ ...KEY_SPECS, ...CHANNEL_AS_KEY_IN_SCRIPTS })
    .filter(([name]) => !NOT_FROM_SCRIPTS.has(name))
    .map(([name, spec]) => `${name}:${luaSpec(spec)}`);
  return ` ${entries.join(" ")} `;
}

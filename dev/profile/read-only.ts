/**
 * What Upstash's read-only token may run: "read commands only", and not "some powerful read
 * commands (e.g. SCAN, KEYS)" (redis/features/restapi.mdx). Upstash's read-only token is the ACL
 * user `default_ro` (redis/troubleshooting/readonly_connection.mdx), so a refusal is answered with
 * Redis's ACL error. The list is an allow-list: a command not named here is refused.
 */
import type { Command } from "../backend.js";
import { commandName } from "../resp/command-policy.js";
import { upstashErrors } from "./settings.js";

const READ_COMMANDS = new Set([
  // strings and bits
  "get",
  "mget",
  "strlen",
  "getrange",
  "substr",
  "getbit",
  "bitcount",
  "bitpos",
  "bitfield_ro",
  "lcs",
  // keys (no KEYS, SCAN, RANDOMKEY: the "powerful" reads)
  "exists",
  "type",
  "ttl",
  "pttl",
  "expiretime",
  "pexpiretime",
  "touch",
  "dbsize",
  // hashes
  "hget",
  "hmget",
  "hexists",
  "hlen",
  "hstrlen",
  "hgetall",
  "hkeys",
  "hvals",
  "hrandfield",
  "hscan",
  // lists
  "lrange",
  "llen",
  "lindex",
  "lpos",
  // sets
  "smembers",
  "sismember",
  "smismember",
  "scard",
  "sinter",
  "sintercard",
  "sunion",
  "sdiff",
  "srandmember",
  "sscan",
  // sorted sets
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
  "zunion",
  "zinter",
  "zdiff",
  "zintercard",
  "zrandmember",
  "zscan",
  // geo, HyperLogLog, streams
  "geopos",
  "geohash",
  "geodist",
  "geosearch",
  "pfcount",
  "xrange",
  "xrevrange",
  "xlen",
  "xread",
  "xinfo",
  "xpending",
  // scripts that cannot write, and harmless server commands
  "eval_ro",
  "evalsha_ro",
  "fcall_ro",
  "ping",
  "echo",
  "time",
]);

/** The reads the read-only token is refused although they change nothing. */
const POWERFUL_READS = new Set(["scan", "keys", "randomkey"]);

/**
 * Whether `command` only reads, so a global database's read region may answer it (replica mode:
 * dev/replica/). EVAL, EVALSHA and FCALL are writes there whatever their script does.
 */
export function isReadCommand(command: Command): boolean {
  const name = commandName(command);
  return READ_COMMANDS.has(name) || POWERFUL_READS.has(name);
}

/** Why the read-only token may not run `command`, or undefined when it may. */
export function readOnlyRefusal(command: Command): string | undefined {
  const name = commandName(command);
  return READ_COMMANDS.has(name) ? undefined : upstashErrors.readOnly(name);
}

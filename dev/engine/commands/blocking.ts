/**
 * Blocking pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX). The handlers here
 * are one non-blocking attempt each, which is exactly how Redis runs them inside MULTI (Redis 7.0
 * refuses them in scripts: "not allowed from script");
 * the embedded backend parks a client whose attempt found nothing and retries it when data
 * arrives (see ../waiters.ts). Each attempt delegates to the non-blocking command (LPOP, LMOVE,
 * ZPOPMIN…), so the replies and errors are that command's.
 */
import type { Reply } from "../../backend.js";
import { asciiLower } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { Errors, fail, unknownCommand } from "../errors.js";
import { type LongDouble, parseLongDouble } from "../longdouble.js";
import { INT64_MAX } from "../numbers.js";
import { R } from "../replies.js";

const TIMEOUT_NOT_FLOAT = "ERR timeout is not a float or out of range";
const TIMEOUT_NEGATIVE = "ERR timeout is negative";
const NUMKEYS_NOT_POSITIVE = "ERR numkeys should be greater than 0";
const COUNT_NOT_POSITIVE = "ERR count should be greater than 0";

/** Looks up a command of the table by lower-case name. */
export type CommandLookup = (name: string) => CommandSpec | undefined;

/** Where the timeout argument sits: BLMPOP/BZMPOP lead with it, the others end with it. */
function timeoutArg(argv: readonly string[]): string | undefined {
  const name = asciiLower(argv[0] ?? "");
  return name === "blmpop" || name === "bzmpop" ? argv[1] : argv[argv.length - 1];
}

/**
 * The timeout of a blocking command in ms (`Infinity` for 0, which blocks forever), or a
 * CommandError with Redis's text. Redis 7.0 parses seconds as a long double (so `0x10` and `inf`
 * are numbers) and converts seconds × 1000 to a long long, truncating: a sub-millisecond timeout
 * blocks forever, and one past the long long range becomes LLONG_MIN, hence "negative".
 */
export function blockingTimeoutMs(argv: readonly string[]): number {
  const seconds = parseLongDouble(timeoutArg(argv) ?? "");
  if (seconds === null || seconds.kind === "nan") fail(TIMEOUT_NOT_FLOAT);
  const ms = truncatedMillis(seconds);
  if (ms === null || ms < 0n) fail(TIMEOUT_NEGATIVE);
  return ms === 0n ? Number.POSITIVE_INFINITY : Number(ms);
}

/** (long long)(seconds * 1000), or null where the C conversion leaves the long long range. */
function truncatedMillis(seconds: LongDouble): bigint | null {
  if (seconds.kind !== "finite") return null;
  const scaled = seconds.mantissa * 1000n;
  const magnitude =
    seconds.exp >= 0 ? scaled << BigInt(seconds.exp) : scaled >> BigInt(-seconds.exp);
  if (magnitude > INT64_MAX) return null;
  return seconds.negative ? -magnitude : magnitude;
}

function delegate(ctx: CommandContext, lookup: CommandLookup, argv: readonly string[]): Reply {
  const spec = lookup(asciiLower(argv[0]!));
  if (spec === undefined) fail(unknownCommand(argv[0]!, argv.slice(1)));
  return spec.handler(ctx, argv);
}

function isNil(reply: Reply): boolean {
  return (reply.type === "bulk" || reply.type === "array") && reply.value === null;
}

/** BLPOP/BRPOP key… timeout → [key, element] from the first non-empty key; BZPOP* → [key, member, score]. */
function firstKeyPop(pop: string, lookup: CommandLookup) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    blockingTimeoutMs(argv);
    for (const key of argv.slice(1, -1)) {
      const popped = delegate(ctx, lookup, [pop, key]);
      if (popped.type === "error") return popped;
      if (isNil(popped) || (popped.type === "array" && popped.value?.length === 0)) continue;
      const items = popped.type === "array" ? (popped.value ?? []) : [popped];
      return R.array([R.bulk(key), ...items]);
    }
    return R.nilArray();
  };
}

/** BLMOVE src dst from to timeout / BRPOPLPUSH src dst timeout → LMOVE. */
function move(fixedEnds: readonly [string, string] | undefined, lookup: CommandLookup) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    blockingTimeoutMs(argv);
    const [source, destination] = [argv[1]!, argv[2]!];
    const ends = fixedEnds ?? [argv[3]!, argv[4]!];
    return delegate(ctx, lookup, ["lmove", source, destination, ...ends]);
  };
}

/** BLMPOP timeout numkeys key… LEFT|RIGHT [COUNT n] → [key, [element…]] from the first non-empty key. */
function blmpop(lookup: CommandLookup) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    blockingTimeoutMs(argv);
    const numkeys = Number(argv[2]);
    if (!Number.isInteger(numkeys) || numkeys <= 0) fail(NUMKEYS_NOT_POSITIVE);
    const keys = argv.slice(3, 3 + numkeys);
    const rest = argv.slice(3 + numkeys);
    const where = asciiLower(rest[0] ?? "");
    if (keys.length < numkeys || (where !== "left" && where !== "right")) fail(Errors.syntax);
    let count = 1;
    if (rest.length === 3 && asciiLower(rest[1]!) === "count") {
      count = Number(rest[2]);
      if (!Number.isInteger(count) || count <= 0) fail(COUNT_NOT_POSITIVE);
    } else if (rest.length !== 1) {
      fail(Errors.syntax);
    }
    const pop = where === "left" ? "lpop" : "rpop";
    for (const key of keys) {
      const popped = delegate(ctx, lookup, [pop, key, String(count)]);
      if (popped.type === "error") return popped;
      if (!isNil(popped)) return R.array([R.bulk(key), popped]);
    }
    return R.nilArray();
  };
}

/** The blocking commands, resolving the commands they delegate to through `lookup` at run time. */
export function blockingCommands(lookup: CommandLookup): CommandSpec[] {
  const specs: CommandSpec[] = [
    { name: "blpop", arity: -3, write: true, handler: firstKeyPop("lpop", lookup) },
    { name: "brpop", arity: -3, write: true, handler: firstKeyPop("rpop", lookup) },
    { name: "bzpopmin", arity: -3, write: true, handler: firstKeyPop("zpopmin", lookup) },
    { name: "bzpopmax", arity: -3, write: true, handler: firstKeyPop("zpopmax", lookup) },
    { name: "blmove", arity: 6, write: true, handler: move(undefined, lookup) },
    { name: "brpoplpush", arity: 4, write: true, handler: move(["RIGHT", "LEFT"], lookup) },
    { name: "blmpop", arity: -5, write: true, handler: blmpop(lookup) },
  ];
  return specs.map((spec) => ({ ...spec, noScript: true }));
}

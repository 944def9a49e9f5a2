/** Sorted-set commands. Scores are doubles and are printed the way Redis 7.0 does (`%.17g`). */
import type { Reply } from "../../backend.js";
import { asciiLower } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { Errors, fail } from "../errors.js";
import { formatScore, parseDouble } from "../numbers.js";
import { R } from "../replies.js";
import { type ScoreBound, type ZEntry, ZSet } from "../zset.js";
import {
  clampRange,
  deleteIfEmpty,
  floatArg,
  lookupOrCreate,
  lookupTyped,
  smallIntArg,
} from "./util.js";

const newZSet = () => ({ type: "zset" as const, data: new ZSet() });

function getZSet(ctx: CommandContext, key: string): ZSet | undefined {
  return lookupTyped(ctx, key, "zset")?.data;
}

const LEADING_SPACE = /^[ \t\n\v\f\r]+/;

/**
 * Score range bounds use plain `strtod` in Redis (zslParseRange): leading blanks are skipped,
 * an empty string reads as 0 and overflow saturates to ±inf; only NaN or trailing junk fail.
 */
function parseBound(text: string): ScoreBound {
  const exclusive = text.startsWith("(");
  const body = (exclusive ? text.slice(1) : text).replace(LEADING_SPACE, "");
  if (body === "") return { value: 0, exclusive };
  const value =
    parseDouble(body) ?? (/^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$/.test(body) ? Number(body) : null);
  if (value === null || Number.isNaN(value)) fail(Errors.minMaxNotFloat);
  return { value, exclusive };
}

function withScores(entries: readonly ZEntry[], scores: boolean): Reply {
  const out: Reply[] = [];
  for (const entry of entries) {
    out.push(R.bulk(entry.member));
    if (scores) out.push(R.bulk(formatScore(entry.score)));
  }
  return R.array(out);
}

function zadd(ctx: CommandContext, argv: readonly string[], forceIncr = false): Reply {
  const flags = { nx: false, xx: false, gt: false, lt: false, ch: false, incr: forceIncr };
  let at = 2;
  for (; at < argv.length; at++) {
    const opt = asciiLower(argv[at]!);
    if (
      opt === "nx" ||
      opt === "xx" ||
      opt === "gt" ||
      opt === "lt" ||
      opt === "ch" ||
      opt === "incr"
    ) {
      flags[opt] = true;
    } else break;
  }
  const elements = argv.length - at;
  if (elements % 2 !== 0 || elements === 0) fail(Errors.syntax);
  if (flags.nx && flags.xx) fail("ERR XX and NX options at the same time are not compatible");
  if ((flags.gt && flags.nx) || (flags.lt && flags.nx) || (flags.gt && flags.lt)) {
    fail("ERR GT, LT, and/or NX options at the same time are not compatible");
  }
  if (flags.incr && elements > 2) fail("ERR INCR option supports a single increment-element pair");
  const pairs: { score: number; member: string }[] = [];
  for (let i = at; i < argv.length; i += 2) {
    pairs.push({ score: floatArg(argv[i]), member: argv[i + 1]! });
  }

  const key = argv[1]!;
  let zset = getZSet(ctx, key);
  let added = 0;
  let updated = 0;
  let processed = 0;
  let lastScore = 0;
  if (zset === undefined && !flags.xx) zset = lookupOrCreate(ctx, key, "zset", newZSet);
  if (zset !== undefined) {
    for (const { member, score: given } of pairs) {
      const current = zset.score(member);
      let score = given;
      if (current !== undefined) {
        if (flags.nx) continue;
        if (flags.incr) {
          score += current;
          if (Number.isNaN(score)) fail("ERR resulting score is not a number (NaN)");
        }
        if ((flags.lt && score >= current) || (flags.gt && score <= current)) continue;
        if (score !== current) {
          zset.set(member, score);
          updated++;
        }
      } else {
        if (flags.xx) continue;
        zset.set(member, score);
        added++;
      }
      processed++;
      lastScore = score;
    }
    deleteIfEmpty(ctx, key, zset.size);
  }
  if (flags.incr) return processed > 0 ? R.bulk(formatScore(lastScore)) : R.nil();
  return R.int(flags.ch ? added + updated : added);
}

function zrem(ctx: CommandContext, argv: readonly string[]): Reply {
  const key = argv[1]!;
  const zset = getZSet(ctx, key);
  if (zset === undefined) return R.int(0);
  let removed = 0;
  for (const member of argv.slice(2)) if (zset.delete(member)) removed++;
  deleteIfEmpty(ctx, key, zset.size);
  return R.int(removed);
}

function zrankCommand(reverse: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const zset = getZSet(ctx, argv[1]!);
    const rank = zset?.rank(argv[2]!);
    if (zset === undefined || rank === undefined) return R.nil();
    return R.int(reverse ? zset.size - 1 - rank : rank);
  };
}

type RangeKind = "rank" | "score" | "lex";

/** The shared engine of ZRANGE, ZREVRANGE, ZRANGEBYSCORE and ZREVRANGEBYSCORE. */
function zrangeGeneric(
  ctx: CommandContext,
  argv: readonly string[],
  fixedKind: RangeKind | undefined,
  fixedReverse: boolean | undefined,
): Reply {
  let kind = fixedKind;
  let reverse = fixedReverse;
  let scores = false;
  let offset = 0;
  let limit = -1;
  for (let j = 4; j < argv.length; j++) {
    const opt = asciiLower(argv[j]!);
    if (opt === "withscores") scores = true;
    else if (opt === "limit" && argv.length - j - 1 >= 2) {
      offset = smallIntArg(argv[j + 1]);
      limit = smallIntArg(argv[j + 2]);
      j += 2;
    } else if (reverse === undefined && opt === "rev") reverse = true;
    else if (kind === undefined && opt === "bylex") kind = "lex";
    else if (kind === undefined && opt === "byscore") kind = "score";
    else fail(Errors.syntax);
  }
  const rangeKind = kind ?? "rank";
  const rev = reverse ?? false;
  if (limit !== -1 && rangeKind === "rank") {
    fail("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
  }
  if (scores && rangeKind === "lex") {
    fail("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
  }
  if (rangeKind === "lex") fail("ERR BYLEX is not supported by the embedded engine");
  const key = argv[1]!;
  // With REV, score ranges are written max first.
  const [minText, maxText] =
    rev && rangeKind === "score" ? [argv[3]!, argv[2]!] : [argv[2]!, argv[3]!];

  if (rangeKind === "rank") {
    const start = smallIntArg(minText);
    const stop = smallIntArg(maxText);
    const zset = getZSet(ctx, key);
    if (zset === undefined) return R.array([]);
    const range = clampRange(start, stop, zset.size);
    if (range === null) return R.array([]);
    const size = zset.size;
    const slice = rev
      ? zset.slice(size - 1 - range.stop, size - 1 - range.start).reverse()
      : zset.slice(range.start, range.stop);
    return withScores(slice, scores);
  }

  const min = parseBound(minText);
  const max = parseBound(maxText);
  const zset = getZSet(ctx, key);
  if (zset === undefined) return R.array([]);
  if (offset > 0 && offset >= zset.size) return R.array([]);
  let matches = zset.rangeByScore(min, max);
  if (rev) matches = matches.reverse();
  // A negative offset skips everything in Redis; a negative limit means "no limit".
  if (offset < 0) return R.array([]);
  matches = matches.slice(offset, limit < 0 ? undefined : offset + limit);
  return withScores(matches, scores);
}

function zcount(ctx: CommandContext, argv: readonly string[]): Reply {
  const min = parseBound(argv[2]!);
  const max = parseBound(argv[3]!);
  return R.int(getZSet(ctx, argv[1]!)?.rangeByScore(min, max).length ?? 0);
}

function zremrangebyscore(ctx: CommandContext, argv: readonly string[]): Reply {
  const min = parseBound(argv[2]!);
  const max = parseBound(argv[3]!);
  const key = argv[1]!;
  const zset = getZSet(ctx, key);
  if (zset === undefined) return R.int(0);
  const doomed = zset.rangeByScore(min, max);
  for (const entry of doomed) zset.delete(entry.member);
  deleteIfEmpty(ctx, key, zset.size);
  return R.int(doomed.length);
}

function zscore(ctx: CommandContext, argv: readonly string[]): Reply {
  const score = getZSet(ctx, argv[1]!)?.score(argv[2]!);
  return score === undefined ? R.nil() : R.bulk(formatScore(score));
}

export const zsetCommands: readonly CommandSpec[] = [
  { name: "zadd", arity: -4, write: true, handler: (ctx, argv) => zadd(ctx, argv) },
  {
    name: "zincrby",
    arity: 4,
    write: true,
    handler: (ctx, argv) => zadd(ctx, argv, true),
  },
  { name: "zrem", arity: -3, write: true, handler: zrem },
  { name: "zscore", arity: 3, handler: zscore },
  {
    name: "zmscore",
    arity: -3,
    handler: (ctx, argv) => {
      const zset = getZSet(ctx, argv[1]!);
      return R.bulks(
        argv.slice(2).map((member) => {
          const score = zset?.score(member);
          return score === undefined ? null : formatScore(score);
        }),
      );
    },
  },
  { name: "zrank", arity: 3, handler: zrankCommand(false) },
  { name: "zrevrank", arity: 3, handler: zrankCommand(true) },
  { name: "zcard", arity: 2, handler: (ctx, argv) => R.int(getZSet(ctx, argv[1]!)?.size ?? 0) },
  { name: "zcount", arity: 4, handler: zcount },
  {
    name: "zrange",
    arity: -4,
    handler: (ctx, argv) => zrangeGeneric(ctx, argv, undefined, undefined),
  },
  { name: "zrevrange", arity: -4, handler: (ctx, argv) => zrangeGeneric(ctx, argv, "rank", true) },
  {
    name: "zrangebyscore",
    arity: -4,
    handler: (ctx, argv) => zrangeGeneric(ctx, argv, "score", false),
  },
  {
    name: "zrevrangebyscore",
    arity: -4,
    handler: (ctx, argv) => zrangeGeneric(ctx, argv, "score", true),
  },
  { name: "zremrangebyscore", arity: 4, write: true, handler: zremrangebyscore },
];

/** Sorted-set commands. Scores are doubles and are printed the way Redis 7.0 does (`%.17g`). */
import type { Reply } from "../../backend.js";
import { asciiLower } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { Errors, fail } from "../errors.js";
import { formatScore, parseDouble } from "../numbers.js";
import { R } from "../replies.js";
import { type LexBound, type ScoreBound, type ZEntry, ZSet } from "../zset.js";
import {
  clampRange,
  deleteIfEmpty,
  floatArg,
  lookupOrCreate,
  lookupTyped,
  nonNegativeArg,
  randomIndex,
  randomPick,
  scanCollection,
  smallIntArg,
} from "./util.js";

const newZSet = () => ({ type: "zset" as const, data: new ZSet() });

export function getZSet(ctx: CommandContext, key: string): ZSet | undefined {
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

export function withScores(entries: readonly ZEntry[], scores: boolean): Reply {
  const out: Reply[] = [];
  for (const entry of entries) {
    out.push(R.bulk(entry.member));
    if (scores) out.push(R.bulk(formatScore(entry.score)));
  }
  return R.array(out);
}

export function zadd(ctx: CommandContext, argv: readonly string[], forceIncr = false): Reply {
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

/** `-`, `+`, `[member` or `(member`, as zslParseLexRangeItem accepts them. */
function parseLexBound(text: string): LexBound {
  if (text === "-") return { kind: "min" };
  if (text === "+") return { kind: "max" };
  if (text.startsWith("[") || text.startsWith("(")) {
    return { kind: "value", value: text.slice(1), exclusive: text.startsWith("(") };
  }
  return fail("ERR min or max not valid string range item");
}

/** Applies ZRANGE's LIMIT: a negative offset skips everything, a negative count means all. */
function applyLimit(matches: ZEntry[], offset: number, limit: number): ZEntry[] {
  if (offset < 0) return [];
  return matches.slice(offset, limit < 0 ? undefined : offset + limit);
}

/** Replaces `key` with the entries (a fresh value, no TTL), or deletes it when there are none. */
export function storeZSet(ctx: CommandContext, key: string, entries: readonly ZEntry[]): Reply {
  if (entries.length === 0) {
    ctx.db.delete(key);
    return R.int(0);
  }
  const zset = new ZSet();
  for (const entry of entries) zset.set(entry.member, entry.score);
  ctx.db.set(key, { type: "zset", data: zset });
  return R.int(zset.size);
}

interface RangeShape {
  /** Where the source key sits: 1 for ZRANGE and friends, 2 for ZRANGESTORE (after dst). */
  readonly keyIndex: 1 | 2;
  readonly kind?: RangeKind;
  readonly reverse?: boolean;
}

/** The shared engine of ZRANGE, ZRANGESTORE, ZREVRANGE and Z[REV]RANGEBY{SCORE,LEX}. */
function zrangeGeneric(ctx: CommandContext, argv: readonly string[], shape: RangeShape): Reply {
  const store = shape.keyIndex === 2;
  let kind = shape.kind;
  let reverse = shape.reverse;
  let scores = false;
  let offset = 0;
  let limit = -1;
  for (let j = shape.keyIndex + 3; j < argv.length; j++) {
    const opt = asciiLower(argv[j]!);
    if (!store && opt === "withscores") scores = true;
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
  const key = argv[shape.keyIndex]!;
  const first = argv[shape.keyIndex + 1]!;
  const second = argv[shape.keyIndex + 2]!;
  // With REV, score and lex ranges are written max first.
  const [minText, maxText] = rev && rangeKind !== "rank" ? [second, first] : [first, second];
  const emit = (entries: ZEntry[]): Reply =>
    store ? storeZSet(ctx, argv[1]!, entries) : withScores(entries, scores);

  let select: (zset: ZSet) => ZEntry[];
  if (rangeKind === "rank") {
    const start = smallIntArg(minText);
    const stop = smallIntArg(maxText);
    select = (zset) => {
      const range = clampRange(start, stop, zset.size);
      if (range === null) return [];
      const size = zset.size;
      return rev
        ? zset.slice(size - 1 - range.stop, size - 1 - range.start).reverse()
        : zset.slice(range.start, range.stop);
    };
  } else {
    let pick: (zset: ZSet) => ZEntry[];
    if (rangeKind === "score") {
      const min = parseBound(minText);
      const max = parseBound(maxText);
      pick = (zset) => zset.rangeByScore(min, max);
    } else {
      const min = parseLexBound(minText);
      const max = parseLexBound(maxText);
      pick = (zset) => zset.rangeByLex(min, max);
    }
    select = (zset) => {
      if (offset > 0 && offset >= zset.size) return [];
      const matches = pick(zset);
      return applyLimit(rev ? matches.reverse() : matches, offset, limit);
    };
  }
  const zset = getZSet(ctx, key);
  return emit(zset === undefined ? [] : select(zset));
}

function zlexcount(ctx: CommandContext, argv: readonly string[]): Reply {
  const min = parseLexBound(argv[2]!);
  const max = parseLexBound(argv[3]!);
  return R.int(getZSet(ctx, argv[1]!)?.rangeByLex(min, max).length ?? 0);
}

/** ZREMRANGEBYSCORE / BYLEX / BYRANK: `select` picks the doomed entries (parsing comes first). */
function removeRange(select: (argv: readonly string[]) => (zset: ZSet) => readonly ZEntry[]) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const pick = select(argv);
    const key = argv[1]!;
    const zset = getZSet(ctx, key);
    if (zset === undefined) return R.int(0);
    const doomed = pick(zset);
    for (const entry of doomed) zset.delete(entry.member);
    deleteIfEmpty(ctx, key, zset.size);
    return R.int(doomed.length);
  };
}

const zremrangebyscore = removeRange((argv) => {
  const min = parseBound(argv[2]!);
  const max = parseBound(argv[3]!);
  return (zset) => zset.rangeByScore(min, max);
});

const zremrangebylex = removeRange((argv) => {
  const min = parseLexBound(argv[2]!);
  const max = parseLexBound(argv[3]!);
  return (zset) => zset.rangeByLex(min, max);
});

const zremrangebyrank = removeRange((argv) => {
  const start = smallIntArg(argv[2]);
  const stop = smallIntArg(argv[3]);
  return (zset) => {
    const range = clampRange(start, stop, zset.size);
    return range === null ? [] : zset.slice(range.start, range.stop);
  };
});

type ZSetAlgebra = "union" | "inter" | "diff";
type Aggregate = "sum" | "min" | "max";

/** A source of ZUNION & co: sorted sets, or plain sets whose members all score 1. */
type ScoreSource = ReadonlyMap<string, number>;

function sourceOf(ctx: CommandContext, key: string): ScoreSource {
  const entry = ctx.db.lookup(key, ctx.now());
  if (entry === undefined) return new Map();
  if (entry.value.type === "zset") {
    return new Map(entry.value.data.entries().map((e) => [e.member, e.score]));
  }
  if (entry.value.type === "set") return new Map([...entry.value.data].map((m) => [m, 1]));
  return fail(Errors.wrongType);
}

function aggregate(how: Aggregate, current: number | undefined, value: number): number {
  if (current === undefined) return value;
  if (how === "min") return Math.min(current, value);
  if (how === "max") return Math.max(current, value);
  const sum = current + value;
  return Number.isNaN(sum) ? 0 : sum;
}

function combineScores(
  op: ZSetAlgebra,
  sources: readonly ScoreSource[],
  weights: readonly number[],
  how: Aggregate,
): ZEntry[] {
  const weighted = (score: number, i: number): number => {
    const value = score * weights[i]!;
    return Number.isNaN(value) ? 0 : value;
  };
  const out = new Map<string, number>();
  if (op === "union") {
    sources.forEach((source, i) => {
      for (const [member, score] of source) {
        out.set(member, aggregate(how, out.get(member), weighted(score, i)));
      }
    });
  } else if (op === "inter") {
    // Redis walks the smallest input first and aggregates the others in size order.
    const order = sources.map((_, i) => i).sort((a, b) => sources[a]!.size - sources[b]!.size);
    const [smallest, ...others] = order;
    for (const [member, score] of sources[smallest!]!) {
      let total = weighted(score, smallest!);
      let everywhere = true;
      for (const i of others) {
        const other = sources[i]!.get(member);
        if (other === undefined) {
          everywhere = false;
          break;
        }
        total = aggregate(how, total, weighted(other, i));
      }
      if (everywhere) out.set(member, total);
    }
  } else {
    const [first, ...rest] = sources;
    for (const [member, score] of first!) {
      if (rest.every((source) => !source.has(member))) out.set(member, score);
    }
  }
  const zset = new ZSet();
  for (const [member, score] of out) zset.set(member, score);
  return [...zset.entries()];
}

/** ZUNION, ZINTER, ZDIFF and their STORE forms, with Redis's argument checks and their order. */
function zsetAlgebraCommand(name: string, op: ZSetAlgebra, store: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const numkeysAt = store ? 2 : 1;
    const numkeys = smallIntArg(argv[numkeysAt]);
    if (numkeys < 1) fail(`ERR at least 1 input key is needed for '${name}' command`);
    if (numkeys > argv.length - numkeysAt - 1) fail(Errors.syntax);
    const keys = argv.slice(numkeysAt + 1, numkeysAt + 1 + numkeys);
    const sources = keys.map((key) => sourceOf(ctx, key));
    const weights: number[] = keys.map(() => 1);
    let how: Aggregate = "sum";
    let scores = false;
    for (let j = numkeysAt + 1 + numkeys; j < argv.length; j++) {
      const opt = asciiLower(argv[j]!);
      const remaining = argv.length - j;
      if (op !== "diff" && opt === "weights" && remaining >= numkeys + 1) {
        for (let i = 0; i < numkeys; i++) {
          weights[i] = floatArg(argv[++j], "ERR weight value is not a float");
        }
      } else if (op !== "diff" && opt === "aggregate" && remaining >= 2) {
        const choice = asciiLower(argv[++j]!);
        if (choice !== "sum" && choice !== "min" && choice !== "max") fail(Errors.syntax);
        how = choice;
      } else if (!store && opt === "withscores") {
        scores = true;
      } else fail(Errors.syntax);
    }
    const result = combineScores(op, sources, weights, how);
    return store ? storeZSet(ctx, argv[1]!, result) : withScores(result, scores);
  };
}

function zpopCommand(max: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    if (argv.length > 3) fail(Errors.syntax);
    const count = argv.length === 3 ? nonNegativeArg(argv[2]) : 1;
    const key = argv[1]!;
    const zset = getZSet(ctx, key);
    if (zset === undefined || count === 0) return R.array([]);
    const size = zset.size;
    const taken = max
      ? zset.slice(Math.max(0, size - count), size - 1).reverse()
      : zset.slice(0, Math.min(count, size) - 1);
    for (const entry of taken) zset.delete(entry.member);
    deleteIfEmpty(ctx, key, zset.size);
    return withScores(taken, true);
  };
}

function zrandmember(ctx: CommandContext, argv: readonly string[]): Reply {
  const hasCount = argv.length >= 3;
  if (argv.length > 4 || (argv.length === 4 && asciiLower(argv[3]!) !== "withscores")) {
    fail(Errors.syntax);
  }
  const count = hasCount ? smallIntArg(argv[2]) : 1;
  const zset = getZSet(ctx, argv[1]!);
  if (zset === undefined) return hasCount ? R.array([]) : R.nil();
  const all = zset.entries();
  if (!hasCount) return R.bulk(all[randomIndex(all.length)]!.member);
  const picked = randomPick(all, count);
  return withScores(picked, argv.length === 4);
}

function zscan(ctx: CommandContext, argv: readonly string[]): Reply {
  return scanCollection(
    argv,
    () => getZSet(ctx, argv[1]!)?.entries(),
    (entry) => entry.member,
    (entry) => [entry.member, formatScore(entry.score)],
  );
}

function zcount(ctx: CommandContext, argv: readonly string[]): Reply {
  const min = parseBound(argv[2]!);
  const max = parseBound(argv[3]!);
  return R.int(getZSet(ctx, argv[1]!)?.rangeByScore(min, max).length ?? 0);
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
    handler: (ctx, argv) => zrangeGeneric(ctx, argv, { keyIndex: 1 }),
  },
  {
    name: "zrangestore",
    arity: -5,
    write: true,
    handler: (ctx, argv) => zrangeGeneric(ctx, argv, { keyIndex: 2 }),
  },
  ...(
    [
      ["zrevrange", "rank", true],
      ["zrangebyscore", "score", false],
      ["zrevrangebyscore", "score", true],
      ["zrangebylex", "lex", false],
      ["zrevrangebylex", "lex", true],
    ] as const
  ).map(
    ([name, kind, reverse]): CommandSpec => ({
      name,
      arity: -4,
      handler: (ctx, argv) => zrangeGeneric(ctx, argv, { keyIndex: 1, kind, reverse }),
    }),
  ),
  { name: "zlexcount", arity: 4, handler: zlexcount },
  { name: "zremrangebyscore", arity: 4, write: true, handler: zremrangebyscore },
  { name: "zremrangebylex", arity: 4, write: true, handler: zremrangebylex },
  { name: "zremrangebyrank", arity: 4, write: true, handler: zremrangebyrank },
  ...(
    [
      ["zunion", "union", false],
      ["zunionstore", "union", true],
      ["zinter", "inter", false],
      ["zinterstore", "inter", true],
      ["zdiff", "diff", false],
      ["zdiffstore", "diff", true],
    ] as const
  ).map(
    ([name, op, store]): CommandSpec => ({
      name,
      arity: store ? -4 : -3,
      write: store,
      handler: zsetAlgebraCommand(name, op, store),
    }),
  ),
  { name: "zpopmin", arity: -2, write: true, handler: zpopCommand(false) },
  { name: "zpopmax", arity: -2, write: true, handler: zpopCommand(true) },
  { name: "zrandmember", arity: -2, handler: zrandmember },
  { name: "zscan", arity: -3, handler: zscan },
];

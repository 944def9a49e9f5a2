/** Helpers shared by command families: typed key lookups and strict argument parsing. */
import type { Reply } from "../../backend.js";
import { isKeyword } from "../bytes.js";
import type { CommandContext } from "../context.js";
import { Errors, fail } from "../errors.js";
import { globMatch } from "../glob.js";
import type { Entry, Value, ValueType } from "../keyspace.js";
import { parseDouble, parseInt64 } from "../numbers.js";
import { R } from "../replies.js";

type DataOf<T extends ValueType> = Extract<Value, { type: T }>["data"];

/** The live entry for `key` if it holds `type`; undefined if missing; WRONGTYPE otherwise. */
export function lookupTyped<T extends ValueType>(
  ctx: CommandContext,
  key: string,
  type: T,
): { entry: Entry; data: DataOf<T> } | undefined {
  const entry = ctx.db.lookup(key, ctx.now());
  if (entry === undefined) return undefined;
  if (entry.value.type !== type) fail(Errors.wrongType);
  return { entry, data: entry.value.data as DataOf<T> };
}

/** Like `lookupTyped`, but creates an empty value of `type` when the key is missing. */
export function lookupOrCreate<T extends Exclude<ValueType, "string">>(
  ctx: CommandContext,
  key: string,
  type: T,
  create: () => Extract<Value, { type: T }>,
): DataOf<T> {
  const found = lookupTyped(ctx, key, type);
  if (found !== undefined) return found.data;
  const value = create();
  ctx.db.set(key, value);
  return (value as Value).data as DataOf<T>;
}

/** Removes a collection key once it has become empty, as Redis never keeps empty collections. */
export function deleteIfEmpty(ctx: CommandContext, key: string, size: number): void {
  if (size === 0) ctx.db.delete(key);
}

/** Parses a 64-bit integer argument or fails with Redis's error. */
export function intArg(text: string | undefined, error: string = Errors.notInteger): bigint {
  const value = text === undefined ? null : parseInt64(text);
  if (value === null) fail(error);
  return value;
}

/** Parses an integer argument that is used as an index or count (safe in a JS number). */
export function smallIntArg(text: string | undefined, error: string = Errors.notInteger): number {
  const value = intArg(text, error);
  // Indexes beyond ±2^53 behave like "very large" anyway; clamp to keep arithmetic exact.
  if (value > 2n ** 53n) return 2 ** 53;
  if (value < -(2n ** 53n)) return -(2 ** 53);
  return Number(value);
}

export function floatArg(text: string | undefined, error: string = Errors.notFloat): number {
  const value = text === undefined ? null : parseDouble(text);
  if (value === null) fail(error);
  return value;
}

/** Converts Redis start/stop (negative = from the end) into a clamped inclusive range. */
export function clampRange(
  start: number,
  stop: number,
  length: number,
): { start: number; stop: number } | null {
  let s = start < 0 ? length + start : start;
  let e = stop < 0 ? length + stop : stop;
  if (s < 0) s = 0;
  if (s > e || s >= length) return null;
  if (e >= length) e = length - 1;
  return { start: s, stop: e };
}

export interface ScanOptions {
  readonly pattern: string | undefined;
  /** Lower-cased TYPE filter (SCAN only). */
  readonly type: string | undefined;
}

/** Validates a SCAN-family cursor: an unsigned 64-bit decimal. */
export function scanCursorArg(text: string): bigint {
  if (!/^[0-9]+$/.test(text) || BigInt(text) >= 2n ** 64n) fail("ERR invalid cursor");
  return BigInt(text);
}

/** Parses MATCH / COUNT (and TYPE when `allowType`) from `argv[from..]`, with Redis's errors. */
export function scanOptions(
  argv: readonly string[],
  from: number,
  allowType: boolean,
): ScanOptions {
  let pattern: string | undefined;
  let type: string | undefined;
  for (let i = from; i < argv.length; i += 2) {
    const option = argv[i];
    const value = argv[i + 1];
    if (value === undefined) fail(Errors.syntax);
    if (isKeyword(option, "count")) {
      if (intArg(value) < 1n) fail(Errors.syntax);
    } else if (isKeyword(option, "match")) {
      pattern = value === "*" ? undefined : value;
    } else if (allowType && isKeyword(option, "type")) {
      type = value.toLowerCase();
    } else {
      fail(Errors.syntax);
    }
  }
  return { pattern, type };
}

/**
 * A whole-collection SCAN reply: every matching item in one page with cursor 0, which is what
 * Redis itself does for small (listpack/intset) collections. `items` yields entries; `emit`
 * turns an entry into its reply elements; `name` is what MATCH tests.
 */
export function scanReply<T>(
  items: Iterable<T>,
  pattern: string | undefined,
  name: (item: T) => string,
  emit: (item: T) => readonly string[],
): Reply {
  const out: string[] = [];
  for (const item of items) {
    if (pattern === undefined || globMatch(pattern, name(item))) out.push(...emit(item));
  }
  return R.array([R.bulk("0"), R.bulks(out)]);
}

/**
 * SSCAN / HSCAN / ZSCAN: validates the cursor, looks the collection up (WRONGTYPE first, a missing
 * key is an empty page), then applies MATCH/COUNT like `scanReply`.
 */
export function scanCollection<T>(
  argv: readonly string[],
  lookup: () => Iterable<T> | undefined,
  name: (item: T) => string,
  emit: (item: T) => readonly string[],
): Reply {
  scanCursorArg(argv[2]!);
  const items = lookup();
  if (items === undefined) return R.array([R.bulk("0"), R.array([])]);
  return scanReply(items, scanOptions(argv, 3, false).pattern, name, emit);
}

/** Parses a count that must be >= 0 (Redis's getPositiveLong), failing with `message`. */
export function nonNegativeArg(
  text: string | undefined,
  message: string = Errors.positiveOutOfRange,
): number {
  const value = smallIntArg(text, message);
  if (value < 0) fail(message);
  return value;
}

/** A uniformly random integer in [0, bound). */
export function randomIndex(bound: number): number {
  return Math.floor(Math.random() * bound);
}

/**
 * SRANDMEMBER/ZRANDMEMBER/HRANDFIELD picking: a positive count gives up to `count` distinct
 * items, a negative one exactly `-count` items that may repeat.
 */
export function randomPick<T>(items: readonly T[], count: number): T[] {
  if (count < 0) return Array.from({ length: -count }, () => items[randomIndex(items.length)]!);
  const shuffled = [...items];
  for (let i = shuffled.length - 1; i > 0; i--) {
    const j = randomIndex(i + 1);
    [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
  }
  return shuffled.slice(0, count);
}

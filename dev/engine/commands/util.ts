/** Helpers shared by command families: typed key lookups and strict argument parsing. */
import type { CommandContext } from "../context.js";
import { Errors, fail } from "../errors.js";
import type { Entry, Value, ValueType } from "../keyspace.js";
import { parseDouble, parseInt64 } from "../numbers.js";

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

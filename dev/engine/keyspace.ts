/** The database: keys → typed values, with millisecond expiry checked lazily and swept now and then. */
import type { Stream } from "./stream.js";
import { ZSet } from "./zset.js";

export type Value =
  | { readonly type: "string"; data: string }
  | { readonly type: "hash"; readonly data: Map<string, string> }
  | { readonly type: "list"; readonly data: string[] }
  | { readonly type: "set"; readonly data: Set<string> }
  | { readonly type: "zset"; readonly data: ZSet }
  | { readonly type: "stream"; readonly data: Stream };

export type ValueType = Value["type"];

/** A deep copy of a value (COPY must not share mutable collections between keys). */
export function cloneValue(value: Value): Value {
  switch (value.type) {
    case "string":
      return { type: "string", data: value.data };
    case "hash":
      return { type: "hash", data: new Map(value.data) };
    case "list":
      return { type: "list", data: [...value.data] };
    case "set":
      return { type: "set", data: new Set(value.data) };
    case "zset": {
      const copy = new ZSet();
      for (const entry of value.data.entries()) copy.set(entry.member, entry.score);
      return { type: "zset", data: copy };
    }
    case "stream":
      return { type: "stream", data: value.data.clone() };
  }
}

export interface Entry {
  value: Value;
  /** Absolute expiry in ms since the epoch, or undefined for no expiry. */
  expireAt: number | undefined;
}

export class Keyspace {
  private readonly entries = new Map<string, Entry>();
  /** Keys that carry an expiry, so a sweep does not have to scan every key. */
  private readonly volatile = new Set<string>();

  /** Returns the live entry for `key`, deleting it first if it has expired at `now`. */
  lookup(key: string, now: number): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    // Redis considers a key expired only once the clock is strictly past its deadline.
    if (entry.expireAt !== undefined && now > entry.expireAt) {
      this.delete(key);
      return undefined;
    }
    return entry;
  }

  /** Stores `value`; the expiry is cleared unless `keepTtl` (SET KEEPTTL, APPEND-style updates). */
  set(key: string, value: Value, keepTtl = false): Entry {
    const existing = this.entries.get(key);
    if (existing !== undefined && keepTtl) {
      existing.value = value;
      return existing;
    }
    const entry: Entry = { value, expireAt: undefined };
    this.entries.set(key, entry);
    this.volatile.delete(key);
    return entry;
  }

  delete(key: string): boolean {
    this.volatile.delete(key);
    return this.entries.delete(key);
  }

  setExpire(key: string, entry: Entry, expireAt: number | undefined): void {
    entry.expireAt = expireAt;
    if (expireAt === undefined) this.volatile.delete(key);
    else this.volatile.add(key);
  }

  /** Live keys at `now`, in insertion order. */
  *keys(now: number): IterableIterator<string> {
    for (const [key, entry] of this.entries) {
      if (entry.expireAt === undefined || now <= entry.expireAt) yield key;
    }
  }

  size(now: number): number {
    this.sweep(now);
    return this.entries.size;
  }

  /** A deep copy of every entry, expired or not (replica mode copies the primary with it). */
  snapshot(): Map<string, Entry> {
    const copy = new Map<string, Entry>();
    for (const [key, entry] of this.entries) {
      copy.set(key, { value: cloneValue(entry.value), expireAt: entry.expireAt });
    }
    return copy;
  }

  /** Replaces every entry with those of `snapshot` (taken by `snapshot()`, not shared after). */
  restore(snapshot: ReadonlyMap<string, Entry>): void {
    this.flush();
    for (const [key, entry] of snapshot) {
      this.entries.set(key, entry);
      if (entry.expireAt !== undefined) this.volatile.add(key);
    }
  }

  flush(): void {
    this.entries.clear();
    this.volatile.clear();
  }

  /** Drops every expired key (active expiry). */
  sweep(now: number): void {
    for (const key of this.volatile) {
      const entry = this.entries.get(key);
      if (entry === undefined || entry.expireAt === undefined) this.volatile.delete(key);
      else if (now > entry.expireAt) this.delete(key);
    }
  }
}

/**
 * Upstash runs a Lua script under a database-wide lock unless its first line is
 * `#!lua flags=allow-key-locking`; then it locks only the script's `KEYS`, and refuses any other
 * key the script touches. A plain Redis refuses the flag itself ("Unexpected flag in script
 * shebang"). So the flag is sent per Redis client: where its REST URL is Upstash's, or where a
 * LockClient's `scriptKeyLocking` option says so. Every edgelock script declares the keys it
 * touches, except the push hand-off's, which never runs where the flag is sent (push mode polls
 * there: Upstash serves no blocking pops).
 */
import { restUrlOf } from "./diagnose.js";
import type { RedisLike } from "./redis-like.js";

/** The first line of a script run under per-key locking on Upstash. */
export const KEY_LOCKING_SHEBANG = "#!lua flags=allow-key-locking";

const keyLocking = new WeakMap<RedisLike, boolean>();

/** Says whether scripts sent through `redis` carry the flag (a LockClient's option). */
export function setKeyLocking(redis: RedisLike, on: boolean): void {
  keyLocking.set(redis, on);
}

/**
 * Whether scripts sent through `redis` carry the flag: as set, else true for an
 * `@upstash/redis` client whose REST URL is on Upstash's domain.
 */
export function usesKeyLocking(redis: RedisLike): boolean {
  let on = keyLocking.get(redis);
  if (on === undefined) {
    on = isUpstashUrl(restUrlOf(redis));
    keyLocking.set(redis, on);
  }
  return on;
}

function isUpstashUrl(url: string | undefined): boolean {
  if (url === undefined) return false;
  try {
    return /(^|\.)upstash\.io$/i.test(new URL(url).hostname);
  } catch {
    return false;
  }
}

/**
 * Upstash runs a Lua script under a database-wide lock unless its first line is
 * `#!lua flags=allow-key-locking`; then it locks only the script's `KEYS`, and refuses any other
 * key the script touches. A plain Redis refuses the flag itself ("Unexpected flag in script
 * shebang"). So the flag is sent per Redis client: where its REST URL is Upstash's, or where a
 * LockClient's `scriptKeyLocking` option says so. A flagged script must declare every key it
 * touches. Edgelock's do, once the parts marked `withoutKeyLocking` are cut out of them: the
 * push hand-off, which pushes to a wake list named after a waiter only the script finds. Where
 * the flag is sent no waiter parks (Upstash serves no blocking pops, so push mode polls there),
 * so those parts would never run.
 */
import { restUrlOf } from "./diagnose.js";
import type { RedisLike } from "./redis-like.js";

/** The first line of a script run under per-key locking on Upstash. */
export const KEY_LOCKING_SHEBANG = "#!lua flags=allow-key-locking";

const UNFLAGGED_BEGIN = "--[[unflagged]]";
const UNFLAGGED_END = "--[[/unflagged]]";

/**
 * Marks `lua` (whole statements) as run only where the flag is not sent: the flagged script has
 * it cut out (see flaggedSource), so a key it builds never reaches a server that locks by key.
 */
export function withoutKeyLocking(lua: string): string {
  return `${UNFLAGGED_BEGIN}\n${lua}\n${UNFLAGGED_END}`;
}

/** A script's source as sent with the flag: the shebang, then the source without its unflagged parts. */
export function flaggedSource(source: string): string {
  let flagged = "";
  let rest = source;
  for (;;) {
    const begin = rest.indexOf(UNFLAGGED_BEGIN);
    if (begin < 0) break;
    const end = rest.indexOf(UNFLAGGED_END, begin + UNFLAGGED_BEGIN.length);
    if (end < 0) throw new Error("an unflagged part of a script has no end");
    flagged += rest.slice(0, begin);
    rest = rest.slice(end + UNFLAGGED_END.length);
  }
  return `${KEY_LOCKING_SHEBANG}\n${flagged}${rest}`;
}

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

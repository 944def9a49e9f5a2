/**
 * Upstash runs Lua under a database-wide lock unless the script starts with
 * `#!lua flags=allow-key-locking` (then only its declared `KEYS`); a plain Redis refuses the flag.
 * So it is sent per Redis client as `scriptKeyLocking` says, else until the server refuses it.
 * Flagged scripts have their `withoutKeyLocking` parts (the push hand-off, which builds a key) cut:
 * where the flag is sent no waiter parks. Details: docs/upstash.md.
 */
import { restUrlOf } from "./diagnose.js";
import { redisMessageOf } from "./failures.js";
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

/**
 * Per Redis client: whether its scripts carry the flag, and whether that is settled (a
 * LockClient's option, Upstash's domain, the server's answer to a flagged script) or a guess.
 */
const keyLocking = new WeakMap<RedisLike, { readonly on: boolean; readonly settled: boolean }>();
/** Servers (REST URL origins) that refused the flag: every client of theirs sends none. */
const refusingServers = new Set<string>();
const chosen = new WeakSet<RedisLike>();

/** Says whether scripts sent through `redis` carry the flag (a LockClient's option). */
export function setKeyLocking(redis: RedisLike, on: boolean): void {
  keyLocking.set(redis, { on, settled: true });
  chosen.add(redis);
}

/** Whether scripts through `redis` carry the flag: as set, else unless its server refused it. */
export function usesKeyLocking(redis: RedisLike): boolean {
  return stateOf(redis).on;
}

/**
 * Whether scripts sent through `redis` are known to run under per-key locking: as set, on
 * Upstash's domain, or once a flagged script ran. Until then it is a guess (see usesKeyLocking).
 */
export function runsUnderKeyLocking(redis: RedisLike): boolean {
  const state = stateOf(redis);
  return state.on && state.settled;
}

/**
 * Sends a script with the flag where it is on (`send(true)`), else without; a script refused for
 * the flag never ran, so it is sent again without (see refusedKeyLocking).
 */
export async function sentWithKeyLocking<T>(
  redis: RedisLike,
  send: (flagged: boolean) => Promise<T>,
): Promise<T> {
  if (usesKeyLocking(redis)) {
    try {
      const reply = await send(true);
      keyLockingServed(redis);
      return reply;
    } catch (error) {
      if (!refusedKeyLocking(redis, error)) throw error;
    }
  }
  return send(false);
}

/** After a flagged script ran on `redis`'s server: the flag is settled there. */
function keyLockingServed(redis: RedisLike): void {
  if (!runsUnderKeyLocking(redis)) keyLocking.set(redis, { on: true, settled: true });
}

function stateOf(redis: RedisLike): { readonly on: boolean; readonly settled: boolean } {
  const known = keyLocking.get(redis);
  if (known !== undefined) return known;
  const url = restUrlOf(redis);
  const origin = originOf(url);
  const state =
    origin !== undefined && refusingServers.has(origin)
      ? { on: false, settled: true }
      : { on: true, settled: isUpstashUrl(url) };
  keyLocking.set(redis, state);
  return state;
}

function isUpstashUrl(url: string | undefined): boolean {
  if (url === undefined) return false;
  try {
    return /(^|\.)upstash\.io$/i.test(new URL(url).hostname);
  } catch {
    return false;
  }
}

// Redis 7 ("ERR Unexpected flag in script shebang: allow-key-locking"), Redis 6 and older (a
// shebang is Lua it cannot compile: "unexpected symbol near '#'").
const FLAG_REFUSAL = /shebang|unexpected symbol near '#'/i;

/**
 * Whether a flagged script failed because the server refuses the flag (not chosen by option);
 * then every client of that server in this process sends no flag from now on.
 */
function refusedKeyLocking(redis: RedisLike, error: unknown): boolean {
  if (chosen.has(redis)) return false;
  if (!FLAG_REFUSAL.test(redisMessageOf(error))) return false;
  keyLocking.set(redis, { on: false, settled: true });
  const origin = originOf(restUrlOf(redis));
  if (origin !== undefined) refusingServers.add(origin);
  return true;
}

function originOf(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

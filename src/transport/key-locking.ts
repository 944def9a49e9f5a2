/**
 * Upstash runs Lua under a database-wide lock unless the script starts with
 * `#!lua flags=allow-key-locking` (then only its declared `KEYS`); a plain Redis refuses the flag.
 * So it is sent as a client's `scriptKeyLocking` says, else until the server refuses it: what a
 * server (REST URL origin) answered holds for every client of it in the process.
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

/** Whether scripts carry the flag, and whether that is settled or a guess. */
interface FlagState {
  readonly on: boolean;
  readonly settled: boolean;
}

/**
 * What one server (a REST URL origin) is known to make of the flag, shared by every client of it
 * in this process, and the first flagged script on it while that is not known yet.
 */
interface ServerFlag {
  state: FlagState;
  /** Settles when the script asking the server (the first flagged one) has its answer. */
  probe: Promise<void> | undefined;
}

/** By REST URL origin: one refused request per server and process, not one per client. */
const servers = new Map<string, ServerFlag>();
/** Each client's server: the one of its origin, or its own where it has no URL (a wrapper). */
const serverOfClient = new WeakMap<RedisLike, ServerFlag>();
/** A LockClient's own choice (`scriptKeyLocking`): never a guess, never changed by an answer. */
const chosen = new WeakMap<RedisLike, FlagState>();

/**
 * How long a script waits for the first flagged script on its server to be answered before it
 * goes on the guess itself: a probe that hangs must not hold every script of the server.
 */
const PROBE_WAIT_MS = 1_000;

/** Says whether scripts sent through `redis` carry the flag (a LockClient's option). */
export function setKeyLocking(redis: RedisLike, on: boolean): void {
  chosen.set(redis, { on, settled: true });
}

/** Whether scripts through `redis` carry the flag: as set, else unless its server refused it. */
export function usesKeyLocking(redis: RedisLike): boolean {
  return stateOf(redis).on;
}

/**
 * Whether scripts sent through `redis` are known to run under per-key locking: as set, on
 * Upstash's domain, or once a flagged script ran on its server. Until then it is a guess (see
 * usesKeyLocking).
 */
export function runsUnderKeyLocking(redis: RedisLike): boolean {
  const state = stateOf(redis);
  return state.on && state.settled;
}

/**
 * Whether what `redis`'s server makes of the flag is known (chosen, an `upstash.io` URL, or
 * answered by a script), not a guess: until then a waiter cannot tell which wake channel works.
 */
export function keyLockingKnown(redis: RedisLike): boolean {
  return stateOf(redis).settled;
}

/**
 * Sends a script with the flag where it is on (`send(true)`), else without; a script refused for
 * the flag never ran, so it is sent again without (see refusedKeyLocking). While a server's answer
 * to the flag is unknown, one script (the probe) asks it and the others wait for that answer (at
 * most PROBE_WAIT_MS), so concurrent first scripts cost one refusal, not one each.
 */
export async function sentWithKeyLocking<T>(
  redis: RedisLike,
  send: (flagged: boolean) => Promise<T>,
  answerBy: number = Number.POSITIVE_INFINITY,
): Promise<T> {
  const server = chosen.has(redis) ? undefined : serverOf(redis);
  let answered: (() => void) | undefined;
  while (server !== undefined && !server.state.settled) {
    const asking = server.probe;
    if (asking === undefined) {
      const probe = new Promise<void>((resolve) => {
        answered = () => {
          // Once: a waiter it woke may be the next probe by the time this runs again.
          if (server.probe === probe) server.probe = undefined;
          resolve();
        };
      });
      server.probe = probe;
      break;
    }
    // The probe took too long (its answer may never come: a caller that gave up does not say
    // so): it stops being the probe, and this script asks the server itself.
    // A caller with a deadline waits at most half of what is left of it: the rest is its own
    // request's (a probe whose answer is lost must not time out every script behind it).
    const patience = Math.min(PROBE_WAIT_MS, Math.max(0, (answerBy - Date.now()) / 2));
    if (!(await answeredInTime(asking, patience)) && server.probe === asking)
      server.probe = undefined;
  }
  if (usesKeyLocking(redis)) {
    try {
      const reply = await send(true);
      keyLockingServed(redis);
      return reply;
    } catch (error) {
      if (!refusedKeyLocking(redis, error)) throw error;
    } finally {
      // Served, refused or failed otherwise (then the next script asks again): the waiters go on.
      answered?.();
    }
  }
  answered?.();
  return send(false);
}

/** Resolves to whether `probe` settled within `ms`. */
function answeredInTime(probe: Promise<void>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([probe.then(() => true), late]).finally(() => {
    if (timer !== undefined) clearTimeout(timer);
  });
}

/** After a flagged script ran on `redis`'s server: the flag is settled there. */
function keyLockingServed(redis: RedisLike): void {
  if (chosen.has(redis)) return;
  const server = serverOf(redis);
  if (!server.state.settled) server.state = { on: true, settled: true };
}

function stateOf(redis: RedisLike): FlagState {
  return chosen.get(redis) ?? serverOf(redis).state;
}

function serverOf(redis: RedisLike): ServerFlag {
  const known = serverOfClient.get(redis);
  if (known !== undefined) return known;
  const url = restUrlOf(redis);
  const origin = originOf(url);
  let server = origin === undefined ? undefined : servers.get(origin);
  if (server === undefined) {
    server = { state: { on: true, settled: isUpstashUrl(url) }, probe: undefined };
    if (origin !== undefined) servers.set(origin, server);
  }
  serverOfClient.set(redis, server);
  return server;
}

/** Whether `redis` talks to Upstash itself (an `upstash.io` REST URL). */
export function talksToUpstash(redis: RedisLike): boolean {
  return isUpstashUrl(restUrlOf(redis));
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
  serverOf(redis).state = { on: false, settled: true };
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

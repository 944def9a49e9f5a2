/**
 * Sending a script over REST: the script bound to its SHA-1 (EVALSHA first, EVAL on NOSCRIPT),
 * the key-locking flag as the server accepts it, and the call's time budget and re-sends.
 *
 * Runs a script, re-sending after ambiguous failures with the same arguments: every mutating
 * script replays its first result for a seen operation id, so a re-send never applies twice. The
 * call has a time budget; a request abandoned at it stays exactly-once by the same id.
 */
import { CLIENT_DEFAULTS } from "../defaults.js";
import { LockBackendError } from "../errors.js";
import { sleep } from "../platform.js";
import { describeFetchFailure, hostOf, probeRestUrl, restUrlOf } from "./diagnose.js";
import {
  classifyFailure,
  isAuthRefusal,
  markTransient,
  redisMessageOf,
  sanitizedFailure,
} from "./failures.js";
import type { RedisLike } from "./redis-like.js";
import { sha1Hex } from "./sha1.js";

export interface RetryOptions {
  /** Re-sends after an ambiguous failure, on top of any the Redis client makes itself. */
  retries: number;
  /** Pause before the first re-send; doubled each time. */
  delayMs: number;
  /**
   * The call's time budget in ms, re-sends and the Redis client's own retries included.
   * @default CLIENT_DEFAULTS.backendTimeoutMs
   */
  timeoutMs?: number;
  /**
   * No re-send starts at or after this moment (client clock, epoch ms): a renewal must not
   * re-arm a lease after the renewer's own deadline.
   * @default none
   */
  sendBy?: number;
}

/** Counts what crossed the wire, for tests and benchmarks. */
export interface CallObserver {
  onAttempt?(script: Script): void;
  /** A blocking command was sent (push-mode parking). */
  onBlocking?(command: string): void;
}

export async function callScript(
  redis: RedisLike,
  script: Script,
  keys: string[],
  args: string[],
  retry: RetryOptions,
  observer?: CallObserver,
): Promise<unknown> {
  const budgetMs = retry.timeoutMs ?? CLIENT_DEFAULTS.backendTimeoutMs;
  const deadline = Date.now() + budgetMs;
  const diagnosis = diagnoseWhenSlow(redis, budgetMs, deadline);
  let lastError: unknown;
  let refused = false;
  try {
    for (let attempt = 0; attempt <= retry.retries; attempt++) {
      if (attempt > 0) {
        const pause = retry.delayMs * 2 ** (attempt - 1);
        const resendAt = Date.now() + pause;
        if (resendAt >= deadline || resendAt >= (retry.sendBy ?? Number.POSITIVE_INFINITY)) break;
        await sleep(pause);
      }
      observer?.onAttempt?.(script);
      try {
        return await settleBy(script.run(redis, keys, args, deadline), deadline, budgetMs);
      } catch (error) {
        lastError = error;
        refused = classifyFailure(error) === "refused";
        if (refused || Date.now() >= deadline) break;
      }
    }
  } finally {
    diagnosis.stop();
  }
  throw backendFailure(lastError, script.name, [...args, script.source], {
    redis,
    finding: await diagnosis.finding(isTimeout(lastError)),
  });
}

/**
 * A probe of the REST URL if the call is unanswered at half its budget: `@upstash/redis` re-sends
 * a request whose fetch threw, so a refused connection would otherwise show only as a timeout.
 */
function diagnoseWhenSlow(
  redis: RedisLike,
  budgetMs: number,
  deadline: number,
): { finding(timedOut: boolean): Promise<string | undefined>; stop(): void } {
  let probe: Promise<string | undefined> | undefined;
  // The URL is looked up only when a call is slow: an answered call costs a timer, nothing more.
  const timer = setTimeout(() => {
    const url = restUrlOf(redis);
    if (url === undefined) return;
    probe = probeRestUrl(url, deadline - Date.now()).catch(() => undefined);
  }, budgetMs / 2);
  return {
    stop: () => clearTimeout(timer),
    // Only a call that timed out waits for the probe (which ends by the deadline, now).
    finding: async (timedOut) => (timedOut ? probe : undefined),
  };
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && error.name === "TimeoutError";
}

interface FailureContext {
  readonly redis?: RedisLike;
  readonly finding?: string | undefined;
}

/**
 * The LockBackendError of a failed call `what`, transient unless refused, naming the cause where
 * known. Its cause is a sanitized copy: the client's error echoes the command (`secrets`).
 */
function backendFailure(
  error: unknown,
  what: string,
  secrets: readonly string[],
  context: FailureContext = {},
): Error {
  const cause = sanitizedFailure(error, secrets);
  const url = context.redis === undefined ? undefined : restUrlOf(context.redis);
  const named =
    context.finding ??
    describeFetchFailure(error, url === undefined ? "the server" : hostOf(url)) ??
    (isAuthRefusal(cause.message) ? "REST token refused" : undefined);
  const failure = new LockBackendError(
    `HTTP Redis failed during ${what}: ${named === undefined ? "" : `${named}; `}${cause.message}`,
    { cause },
  );
  return classifyFailure(error) === "refused" ? failure : markTransient(failure);
}

/**
 * Sends one blocking command (`BLPOP key seconds`), held open up to `blockMs`; never re-sent here
 * (the parked waiter asks again through its own loop). Fails after `blockMs` plus the time
 * budget, or at once when `signal` aborts (the server ends the request at its own timeout).
 */
export async function callBlocking(
  redis: RedisLike & Required<Pick<RedisLike, "exec">>,
  command: [string, ...string[]],
  blockMs: number,
  retry: RetryOptions,
  signal?: AbortSignal,
  observer?: CallObserver,
): Promise<unknown> {
  observer?.onBlocking?.(command[0]);
  const budgetMs = blockMs + (retry.timeoutMs ?? CLIENT_DEFAULTS.backendTimeoutMs);
  try {
    return await settleBy(redis.exec(command), Date.now() + budgetMs, budgetMs, signal);
  } catch (error) {
    if (signal?.aborted) throw error;
    throw backendFailure(error, command[0], command, { redis });
  }
}

/**
 * `request`'s outcome, or a rejection (a TimeoutError naming `option`, the setting that sets the
 * budget) at `deadline`; the request then runs on unobserved (its failure handled, so that
 * nothing goes unhandled).
 */
export function settleBy<T>(
  request: Promise<T>,
  deadline: number,
  budgetMs: number,
  signal?: AbortSignal,
  option = "the LockClient option backendTimeoutMs",
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const stop = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", aborted);
    };
    const aborted = () => {
      stop();
      reject(signal?.reason);
    };
    const timer = setTimeout(
      () => {
        stop();
        const error = new Error(`no answer within ${budgetMs} ms (${option})`);
        error.name = "TimeoutError";
        reject(error);
      },
      Math.max(0, deadline - Date.now()),
    );
    if (signal?.aborted) aborted();
    else signal?.addEventListener("abort", aborted, { once: true });
    request.then(
      (value) => {
        stop();
        resolve(value);
      },
      (error: unknown) => {
        stop();
        reject(error);
      },
    );
  });
}

/*
 * A Lua script bound to its SHA-1. On Upstash itself (an `upstash.io` URL) it is sent as EVALSHA
 * first, the `@upstash/ratelimit` way: a cold isolate of a database that already caches it sends
 * 40 bytes, not the whole text, and EVAL only on NOSCRIPT (a script new to the database, a flush,
 * a failover; the script never ran, so sending it again is safe). Elsewhere (a local server, a
 * plain Redis behind a REST proxy) a client sends EVAL the first time (which caches it), EVALSHA
 * after, EVAL again on NOSCRIPT. So an uncontended operation costs one request once the server
 * knows the script. Calls made while that first EVAL is unanswered (a burst to a cold isolate)
 * send EVALSHA first, as on Upstash: one full text per script and client, not one per call.
 */

export class Script {
  private sha?: Promise<string>;
  /** Redis clients on which this script is known to be cached. */
  private readonly cachedOn = new WeakSet<RedisLike>();
  /** Redis clients on which this script's first EVAL is sent and not yet answered. */
  private readonly firstEvalOn = new WeakSet<RedisLike>();
  /** The same script with Upstash's per-key locking flag (see runsUnderKeyLocking). */
  private flagged?: Script;

  constructor(
    /** A short name for errors and debugging, e.g. "lock.acquire". */
    readonly name: string,
    readonly source: string,
  ) {}

  sha1(): Promise<string> {
    this.sha ??= sha1Hex(this.source);
    return this.sha;
  }

  /** This script as sent where per-key locking is on (see flaggedSource). */
  get keyLocking(): Script {
    this.flagged ??= new Script(this.name, flaggedSource(this.source));
    return this.flagged;
  }

  /** `answerBy`: when the caller gives up on the answer (it bounds any wait before sending). */
  run(redis: RedisLike, keys: string[], args: string[], answerBy?: number): Promise<unknown> {
    if (this.source.startsWith(KEY_LOCKING_SHEBANG)) return this.send(redis, keys, args);
    return sentWithKeyLocking(
      redis,
      (flagged) => (flagged ? this.keyLocking : this).send(redis, keys, args),
      answerBy,
    );
  }

  private async send(redis: RedisLike, keys: string[], args: string[]): Promise<unknown> {
    if (!this.cachedOn.has(redis) && !talksToUpstash(redis) && !this.firstEvalOn.has(redis)) {
      this.firstEvalOn.add(redis);
      try {
        const result = await redis.eval(this.source, keys, args);
        this.cachedOn.add(redis);
        return result;
      } finally {
        this.firstEvalOn.delete(redis);
      }
    }
    try {
      return await redis.evalsha(await this.sha1(), keys, args);
    } catch (error) {
      if (classifyFailure(error) !== "noscript") throw error;
      return redis.eval(this.source, keys, args);
    }
  }
}

/*
 * Upstash runs Lua under a database-wide lock unless the script starts with
 * `#!lua flags=allow-key-locking` (then only its declared `KEYS`); a plain Redis refuses the flag.
 * So it is sent as a client's `scriptKeyLocking` says, else until the server refuses it: what a
 * server (REST URL origin) answered holds for every client of it in the process.
 * Flagged scripts have their `withoutKeyLocking` parts (the push hand-off, which builds a key) cut:
 * where the flag is sent no waiter parks. Details: docs/upstash.md.
 */

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

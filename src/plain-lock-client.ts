/**
 * The plain-lock client: one per Redis connection (per isolate), shared by all requests. It
 * offers the reentrant lock only, so a Worker that imports it (`edgelock/lock`) ships none of
 * the other lock kinds; the root entry's LockClient extends it with them (src/client.ts).
 * `edgelock/lock` publishes it as `LockClient`: to its users it is the one client they have.
 */

import { CLIENT_DEFAULTS } from "./defaults.js";
import { LockInputError } from "./errors.js";
import { type LockEventListener, LockEvents, type LockEventType } from "./events.js";
import type { OperationContext } from "./hold/context.js";
import type { LockHandle } from "./hold/handle.js";
import { acquireLiveHold } from "./hold/live-hold.js";
import type { AcquireOptions } from "./locks/exclusive/lock.js";
import { Lock } from "./locks/exclusive/lock.js";
import { currentScopeOwner, newOwnerToken, runWithOwner } from "./platform.js";
import type { CallObserver } from "./transport/call.js";
import { setKeyLocking } from "./transport/call.js";
import { checkCredentials } from "./transport/diagnose.js";
import { checkCanPark, checkRedisLike, type RedisLike } from "./transport/redis-like.js";
import {
  checkCount,
  checkDuration,
  checkLease,
  checkOptions,
  checkOwner,
  checkPrefix,
} from "./validate.js";
import { resolveWaitPolicy, type WaitOptions } from "./wait/policy.js";
import {
  BlockingPops,
  HandOffSubscriptions,
  ParkedSiblings,
  RecentContention,
} from "./wait/push/client-state.js";
import type { LockRuntime } from "./wait/runtime.js";
import type { Renewer } from "./watchdog/renewer.js";
import { inProcessRenewer, WatchdogRegistry } from "./watchdog/renewer.js";

/** Options of `new LockClient(options)` (and of PlainLockClient), each with its default. */
export interface LockClientOptions {
  /** An `@upstash/redis` client (`new Redis({ url, token })`) or any RedisLike. Required. */
  redis: RedisLike;
  /**
   * Prefix of every key edgelock writes: `<prefix>:{<name>}`.
   * @default "edgelock"
   */
  prefix?: string;
  /**
   * Lease of locks acquired without `leaseMs`, in ms; the watchdog renews it every third of it
   * while the handle is held, so a crashed holder frees the lock within this time. It is also the
   * hold's first lease: an acquire answered after it (a slow network, a stalled isolate) is lost on
   * arrival, and waiting callers ask again, so keep it well above a slow round trip.
   * @default 30000
   */
  watchdogTimeoutMs?: number;
  /**
   * How waiters wait: push or polling, backoff and poll budget.
   * @default see WaitOptions (mode "auto")
   */
  wait?: WaitOptions;
  /**
   * Re-sends after an ambiguous failure (network error, 5xx), on top of the Redis client's own
   * retries. Safe because every mutating script replays its first result.
   * @default 2
   */
  retries?: number;
  /**
   * Time budget of one call to Redis, in ms: a script request with edgelock's re-sends and the
   * Redis client's own retries (`@upstash/redis` re-sends a failed fetch up to 5 times over
   * ~4 s by default). A call still unanswered then fails with LockBackendError, so an
   * unreachable or hanging backend fails fast; the abandoned request stays exactly-once (its
   * operation id), and a hold it may still take expires with its lease. 100 to 60000.
   * @default 2000
   */
  backendTimeoutMs?: number;
  /**
   * How long a mutating operation's result is kept in Redis to answer re-sent requests, in ms.
   * Must exceed the longest retry window of the Redis client (about 4.5 s for @upstash/redis).
   * @default 60000
   */
  operationTtlMs?: number;
  /**
   * What renews leases in watchdog mode.
   * @default in-process timers (`inProcessRenewer()`)
   */
  watchdog?: Renewer;
  /**
   * Send every script with Upstash's `#!lua flags=allow-key-locking`, so that Upstash locks only
   * the script's keys instead of the whole database. A plain Redis refuses the flag: by default
   * edgelock then sends that server's scripts without it (one refused request, once per server
   * and process); `false` never sends it, `true` always does (a refusal is then an error). Push
   * mode polls where it is on (Upstash serves no blocking pops). Applies to every script sent
   * through this `redis` client, the Hono middleware's included.
   * @default sent until the server refuses it
   */
  scriptKeyLocking?: boolean;
  /** @internal Counts script calls; used by tests and benchmarks. */
  observer?: CallObserver;
}

const CLIENT_KEYS = [
  "redis",
  "prefix",
  "watchdogTimeoutMs",
  "wait",
  "retries",
  "backendTimeoutMs",
  "operationTtlMs",
  "watchdog",
  "scriptKeyLocking",
  "observer",
] as const;

/** The runtime of each client, for the root entry's LockClient that adds the other kinds. */
const runtimes = new WeakMap<PlainLockClient, LockRuntime>();

/** @internal What `client` shares with the locks it creates. */
export function runtimeOf(client: PlainLockClient): LockRuntime {
  const runtime = runtimes.get(client);
  if (runtime === undefined) throw new LockInputError("Not a LockClient.");
  return runtime;
}

/**
 * The client of the plain lock alone (`edgelock/lock`): `lock()`, `withLock()`, `scope()` and
 * `on()`. The root entry's `LockClient` extends it with the other kinds; anything that takes a
 * PlainLockClient (the Hono middleware, `recordMetrics`) takes either.
 */
export class PlainLockClient {
  readonly #runtime: LockRuntime;
  readonly #events = new LockEvents();

  constructor(options: LockClientOptions) {
    if (options === undefined) {
      throw new LockInputError("new LockClient({ redis }) needs an options object with `redis`.");
    }
    const given = checkOptions<LockClientOptions>(options, "LockClient options", CLIENT_KEYS);
    // A missing URL or token fails here, by name, not as a timeout on the first request.
    checkCredentials(checkRedisLike(given.redis));
    const ctx: OperationContext = {
      redis: checkRedisLike(given.redis),
      retry: {
        retries:
          given.retries === undefined
            ? CLIENT_DEFAULTS.retries
            : checkCount(given.retries, "retries", 0, 10),
        delayMs: CLIENT_DEFAULTS.retryDelayMs,
        timeoutMs:
          given.backendTimeoutMs === undefined
            ? CLIENT_DEFAULTS.backendTimeoutMs
            : checkDuration(given.backendTimeoutMs, "backendTimeoutMs", { min: 100, max: 60_000 }),
      },
      operationTtlMs:
        given.operationTtlMs === undefined
          ? CLIENT_DEFAULTS.operationTtlMs
          : checkDuration(given.operationTtlMs, "operationTtlMs", { min: 10_000 }),
      ...(given.observer ? { observer: given.observer } : {}),
    };
    if (given.scriptKeyLocking !== undefined) {
      if (typeof given.scriptKeyLocking !== "boolean") {
        throw new LockInputError("scriptKeyLocking must be true or false.");
      }
      setKeyLocking(ctx.redis, given.scriptKeyLocking);
    }
    const waitPolicy = resolveWaitPolicy(given.wait);
    if (waitPolicy.mode === "push") checkCanPark(ctx.redis, waitPolicy.wakeBy);
    const watchdog = given.watchdog === undefined ? inProcessRenewer() : given.watchdog;
    if (typeof watchdog?.start !== "function") {
      throw new LockInputError("The watchdog option must be a Renewer (an object with start()).");
    }
    this.#runtime = {
      ctx,
      prefix: given.prefix === undefined ? CLIENT_DEFAULTS.prefix : checkPrefix(given.prefix),
      watchdogTimeoutMs:
        given.watchdogTimeoutMs === undefined
          ? CLIENT_DEFAULTS.watchdogTimeoutMs
          : checkLease(given.watchdogTimeoutMs, "watchdogTimeoutMs"),
      waitPolicy,
      contention: new RecentContention(),
      parkedSiblings: new ParkedSiblings(),
      blockingPops: new BlockingPops(),
      subscriptions: new HandOffSubscriptions(),
      watchdogs: new WatchdogRegistry(watchdog),
      events: this.#events,
      resolveOwner: (explicit) =>
        explicit === undefined ? (currentScopeOwner() ?? newOwnerToken()) : checkOwner(explicit),
      resolveOwnerIfScoped: () => currentScopeOwner(),
    };
    runtimes.set(this, this.#runtime);
  }

  /** The reentrant lock `name` (Redisson getLock). Cheap: no request until you use it. */
  lock(name: string): Lock {
    return new Lock(this.#runtime, name);
  }

  /**
   * Acquires `name`, runs `fn` with the handle, and releases in `finally`, like `await using`:
   * `fn`'s result or error is what you get. A release that finds the lock no longer held (lease
   * expired mid-work) or that Redis did not answer never replaces it: it aborts `handle.signal`
   * and emits `lockLost`. Check `signal` (and send `fencingToken` to the resource) where it
   * matters that the hold lasted to the end.
   * @example
   * const total = await client.withLock("orders:42", async (held) => charge(held.fencingToken));
   */
  async withLock<T>(
    name: string,
    fn: (handle: LockHandle) => Promise<T> | T,
    options?: AcquireOptions,
  ): Promise<T> {
    if (typeof fn !== "function") {
      throw new LockInputError("withLock(name, fn): fn must be a function.");
    }
    const lock = this.lock(name);
    const handle = await acquireLiveHold(
      (waitMs) => lock.acquire(waitMs === undefined ? options : { ...options, waitMs }),
      options?.waitMs,
    );
    try {
      return await fn(handle);
    } finally {
      await handle[Symbol.asyncDispose]();
    }
  }

  /**
   * Runs `fn` with an ambient owner: acquisitions inside it without an explicit `owner` share
   * it, so nested acquisitions of one lock re-enter. The scope is process-wide, not this
   * client's: every LockClient (also one created inside `fn`) uses its owner. Needs
   * AsyncLocalStorage; without it (a Worker without `nodejs_compat`) throws
   * LockScopeUnavailableError.
   * @param fn the work of one logical flow (for example one request)
   * @param owner the owner to use; default a fresh random token
   */
  scope<T>(fn: () => T, owner?: string): T {
    return runWithOwner(owner === undefined ? newOwnerToken() : checkOwner(owner), fn);
  }

  /** The Redis client this client sends its requests to (shared by edgelock/hono's stores). */
  get redis(): RedisLike {
    return this.#runtime.ctx.redis;
  }

  /** The key prefix of this client's locks. */
  get prefix(): string {
    return this.#runtime.prefix;
  }

  /** The owner of the enclosing scope, if any. */
  get currentOwner(): string | undefined {
    return currentScopeOwner();
  }

  /** Subscribes to `lockLost` / `renewalFailed`; returns the unsubscribe function. */
  on<T extends LockEventType>(type: T, listener: LockEventListener<T>): () => void {
    return this.#events.on(type, listener);
  }

  /** A fresh owner token (128 random bits as 32 hex characters). */
  static newOwner(): string {
    return newOwnerToken();
  }
}

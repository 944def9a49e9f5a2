/** `withLock()`: one request at a time per key, across every isolate that shares the Redis. */
import type { Context, Env, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import {
  LockBudgetExceededError,
  LockInputError,
  LockNotHeldError,
  LockWaitTimeoutError,
} from "../errors.js";
import type { LockHandle } from "../hold/handle.js";
import { acquireLiveHold } from "../hold/live-hold.js";
import type { PlainLockClient } from "../plain-lock-client.js";
import { checkDuration, checkLease, checkOptions } from "../validate.js";
import type { WaitOptions } from "../wait/policy.js";
import type { AcquirableLock, ReleasableHold } from "./acquirable-lock.js";
import { releaseOrRetry } from "./background.js";
import type { AnyEnv, WithVariables } from "./env.js";
import { logFailure, type MiddlewareFailure, report } from "./failures.js";
import { lockOfKey } from "./key-scope.js";
import { inRequestScope } from "./owner-scope.js";
import { busyRetryAfter, problem, RecentHolds } from "./responses.js";

/** Why a request did not get the lock, as given to `onBusy`. */
export interface LockBusy {
  readonly name: string;
  /** The holder's remaining lease at the last attempt, in ms (null when unknown). */
  readonly holderTtlMs: number | null;
  /**
   * The default answer's Retry-After, in whole seconds (at least 1): with `leaseMs` when the
   * holder's lease ends; in watchdog mode this middleware's longest recent hold, capped by it.
   */
  readonly retryAfterSeconds: number;
}

/** A LockClient, or a function that returns it for a request. */
export type LockClientSource<E extends Env> =
  | PlainLockClient
  | ((c: Context<E>) => PlainLockClient);

/** Which lock a request takes: a name on a client's plain lock, or any lock kind you build. */
export type LockChoice<E extends Env, H extends ReleasableHold> =
  | {
      /**
       * The plain lock's name for this request, on `client`.
       * @default none: give `lock` instead
       * @example (c) => `orders:${c.req.param("id")}`
       */
      key: (c: Context<E>) => string | Promise<string>;
      /**
       * The LockClient, or a function that returns it for a request (built from `c.env` once
       * per isolate); the request runs in its owner scope.
       * @example (c) => locksFor(c.env)
       */
      client: LockClientSource<E>;
      lock?: never;
    }
  | {
      /**
       * Any lock kind (fair, read or write, multi-lock, RedLock); `c.get("lock")` is its handle.
       * @default none: give `key` and `client` instead
       * @example (c) => locksFor(c.env).fairLock(`payouts:${c.req.param("account")}`)
       */
      lock: (c: Context<E>) => AcquirableLock<H> | Promise<AcquirableLock<H>>;
      /**
       * With `lock`: the request runs in this client's owner scope, so acquisitions of the
       * client's locks inside the handler re-enter.
       * @default none: the lock's own owner handling
       * @example withLock({ client, lock: () => client.fairLock("payouts"), waitMs: 5_000 })
       */
      client?: LockClientSource<E>;
      key?: never;
    };

/** How `withLock()` waits, holds and answers; the same whichever lock it takes. */
export interface WithLockSettings<E extends Env = Env> {
  /**
   * How long a request waits for a busy lock before it gets the busy answer, in ms. Each poll is
   * a Redis request (a Workers subrequest).
   * @default 0 (one attempt)
   * @example withLock({ client, key, waitMs: 2_000 })
   */
  waitMs?: number;
  /**
   * Lease in ms: the lock expires after it even if the isolate dies mid-request.
   * @default none: watchdog mode (the client's `watchdogTimeoutMs`, renewed while the handler runs)
   * @example withLock({ client, key, leaseMs: 15_000 })
   */
  leaseMs?: number;
  /**
   * Overrides the client's polling policy.
   * @default the client's
   * @example withLock({ client, key, waitMs: 5_000, wait: { maxPolls: 10 } })
   */
  wait?: WaitOptions;
  /**
   * The answer when the lock stays busy.
   * @default `409 Conflict`, `application/problem+json`, `Retry-After` from the holder's lease
   * @example withLock({ client, key, onBusy: (c, busy) => c.text("busy", 503) })
   */
  onBusy?: (c: Context<E>, busy: LockBusy) => Response | Promise<Response>;
  /**
   * Whether the default busy answer names the lock in its body. Off, since a lock name often
   * holds an id (an order, a customer) that the caller of a public route need not see.
   * @default false
   * @example withLock({ client, key, exposeLockName: true })
   */
  exposeLockName?: boolean;
  /**
   * Called when the release after the handler fails (the lease ran out mid-handler, or Redis
   * failed and the release is retried in the background); the response is sent all the same.
   * @default one `console.error` line (`logFailure`)
   * @example withLock({ client, key, onFailure: (failure) => metrics.count(failure.kind) })
   */
  onFailure?: (failure: MiddlewareFailure, c: Context<E>) => void | Promise<void>;
}

/** The options of `withLock()`: which lock (`key` + `client`, or `lock`), then how. */
export type WithLockOptions<
  E extends Env = Env,
  H extends ReleasableHold = LockHandle,
> = LockChoice<E, H> & WithLockSettings<E>;

/** The context variables `withLock()` sets: `c.get("lock")` is the held lock's handle. */
export interface WithLockVariables<H extends ReleasableHold = LockHandle> {
  lock: H;
}

const OPTION_KEYS = [
  "key",
  "client",
  "lock",
  "waitMs",
  "leaseMs",
  "wait",
  "onBusy",
  "onFailure",
  "exposeLockName",
] as const;

function busyAnswer(exposeLockName: boolean) {
  return (_c: unknown, busy: LockBusy): Response =>
    problem(
      409,
      "Locked",
      `${exposeLockName ? `"${busy.name}"` : "This resource"} is being worked on by another ` +
        `request; retry after ${busy.retryAfterSeconds} s.`,
      { "retry-after": String(busy.retryAfterSeconds) },
    );
}

/**
 * Acquires a lock before the handler and releases it after, also when the handler throws. With
 * a `client`, the request runs in its owner scope, so nested acquisitions of the lock re-enter.
 *
 * @returns a middleware that sets `c.get("lock")` to the handle (fencing token, `extend()`)
 *
 * @example
 * ```ts
 * const app = new Hono();
 * app.post(
 *   "/orders/:id/pay",
 *   withLock({ client, key: (c) => `orders:${c.req.param("id")}`, waitMs: 2_000 }),
 *   async (c) => {
 *     await charge(c.req.param("id"), { fencingToken: c.get("lock").fencingToken });
 *     return c.json({ ok: true });
 *   },
 * );
 * // Any lock kind: writers of one catalog exclude its readers.
 * app.put(
 *   "/catalog",
 *   withLock({ lock: () => client.readWriteLock("catalog").writeLock(), waitMs: 5_000 }),
 *   (c) => c.text("updated"),
 * );
 * ```
 */
export function withLock<E extends Env = AnyEnv, H extends ReleasableHold = LockHandle>(
  options: WithLockOptions<E, H>,
): MiddlewareHandler<WithVariables<E, WithLockVariables<H>>> {
  const given = checkOptions<WithLockOptions<E, H>>(options, "withLock options", OPTION_KEYS);
  const { wait, onFailure = logFailure } = given;
  const onBusy = given.onBusy ?? busyAnswer(given.exposeLockName === true);
  const holds = new RecentHolds();
  const lockFor = resolveLock<E, H>(given);
  const clientFor = resolveClient(given.client);
  const waitMs = given.waitMs === undefined ? 0 : checkDuration(given.waitMs, "waitMs", { min: 0 });
  const leaseMs = given.leaseMs === undefined ? undefined : checkLease(given.leaseMs);

  return createMiddleware<WithVariables<E, WithLockVariables<H>>>(async function withLock(c, next) {
    // The same request object: the extra variable does not change what the callbacks can see.
    const ctx = c as unknown as Context<E>;
    const locks = clientFor?.(ctx);
    const run = async () => {
      const lock = await lockFor(ctx, locks);
      if (lock instanceof Response) return lock;
      let held: H;
      try {
        held = await acquireLiveHold(
          (left = waitMs) =>
            lock.acquire({
              waitMs: left,
              ...(leaseMs === undefined ? {} : { leaseMs }),
              ...(wait === undefined ? {} : { wait }),
            }),
          waitMs,
        );
      } catch (error) {
        if (error instanceof LockWaitTimeoutError || error instanceof LockBudgetExceededError) {
          const { lockName, holderTtlMs } = error;
          return onBusy(ctx, {
            name: lockName,
            holderTtlMs,
            retryAfterSeconds: busyRetryAfter(holderTtlMs, leaseMs !== undefined, holds.longest()),
          });
        }
        throw error;
      }
      // Nested withLock() on one route: the inner handle shows while the inner lock is held.
      const outer = c.get("lock") as H | undefined;
      c.set("lock", held);
      const heldAt = Date.now();
      try {
        await next();
      } finally {
        holds.add(Date.now() - heldAt);
        if (outer !== undefined) c.set("lock", outer);
        const error = await releaseOrRetry(c, held);
        if (error !== undefined) {
          const consequence =
            error instanceof LockNotHeldError
              ? "The lease ran out before the handler finished: the lock was not held to the end."
              : "The response was sent; the release is retried in the background.";
          await report(onFailure, { kind: "release", key: held.name, error, consequence }, ctx);
        }
      }
    };
    return locks === undefined ? run() : inRequestScope(locks, run);
  });
}

/** The lock of a request: `lock(c)`, or the plain lock `key(c)` of the request's client. */
function resolveLock<E extends Env, H extends ReleasableHold>(
  given: Partial<WithLockOptions<E, H>>,
): (c: Context<E>, locks: PlainLockClient | undefined) => Promise<AcquirableLock<H> | Response> {
  const { key, lock, client } = given;
  if (typeof lock === "function" && key === undefined) return async (c) => lock(c);
  if (typeof key === "function" && lock === undefined && client !== undefined) {
    // Without `lock`, H is LockHandle: a plain lock's acquire() resolves to one. Any text a
    // request gives names a lock (escaped), or the request gets 400.
    return async (c, locks) => {
      const named = await lockOfKey(key(c), (name) => (locks as PlainLockClient).lock(name));
      return "lock" in named ? (named.lock as unknown as AcquirableLock<H>) : named.refused;
    };
  }
  throw new LockInputError(
    "withLock() needs `key: (c) => name` with `client` (a LockClient or (c) => LockClient), " +
      "or `lock: (c) => lock` (any lock kind).",
  );
}

function resolveClient<E extends Env>(
  client: LockClientSource<E> | undefined,
): ((c: Context<E>) => PlainLockClient) | undefined {
  if (client === undefined) return undefined;
  if (typeof client === "function") return client;
  if (typeof client?.lock !== "function") {
    throw new LockInputError("withLock() `client` is a LockClient or (c) => LockClient.");
  }
  return () => client;
}

/** `withLock()`: one request at a time per key, across every isolate that shares the Redis. */
import type { Context, Env, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import type { LockClient } from "../client.js";
import {
  LockBudgetExceededError,
  LockInputError,
  LockNotHeldError,
  LockWaitTimeoutError,
} from "../errors.js";
import type { LockHandle } from "../locks/lock/handle.js";
import { checkDuration, checkLease, checkOptions } from "../validate.js";
import type { WaitOptions } from "../wait/policy.js";
import { releaseOrRetry } from "./background.js";
import { logFailure, type MiddlewareFailure, report } from "./failures.js";
import { inRequestScope } from "./owner-scope.js";
import { problem, retryAfterSeconds } from "./responses.js";

/** Why a request did not get the lock, as given to `onBusy`. */
export interface LockBusy {
  /** The lock name the request asked for. */
  readonly name: string;
  /** The holder's remaining lease at the last attempt, in ms (null when unknown). */
  readonly holderTtlMs: number | null;
  /** The Retry-After the default answer sends: the holder's lease in whole seconds, at least 1. */
  readonly retryAfterSeconds: number;
}

export interface WithLockOptions<E extends Env = Env> {
  /** The lock name for this request, e.g. `(c) => \`orders:${c.req.param("id")}\``. Required. */
  key: (c: Context<E>) => string | Promise<string>;
  /**
   * The LockClient, or a function that returns it for a request (e.g. built from `c.env` once
   * per isolate). Required.
   */
  client: LockClient | ((c: Context<E>) => LockClient);
  /**
   * How long a request waits for a busy lock before it gets the busy answer, in ms. Each poll is a
   * Redis request (a Workers subrequest). Default 0: one attempt.
   */
  waitMs?: number;
  /**
   * Lease in ms: the lock expires after it even if the isolate dies mid-request. Default: none,
   * which is watchdog mode (the client's `watchdogTimeoutMs`, renewed while the handler runs).
   */
  leaseMs?: number;
  /** Overrides the client's polling policy. Default: the client's. */
  wait?: WaitOptions;
  /**
   * The answer when the lock stays busy. Default: `409 Conflict`, `application/problem+json`,
   * with `Retry-After` from the holder's remaining lease.
   */
  onBusy?: (c: Context<E>, busy: LockBusy) => Response | Promise<Response>;
  /**
   * Called when the release after the handler fails: the lease ran out mid-handler (the lock was
   * not held to the end), or Redis failed (the release is retried in the background). The
   * handler's response is sent all the same. Default: one `console.error` line.
   */
  onFailure?: (failure: MiddlewareFailure, c: Context<E>) => void | Promise<void>;
}

/** The context variables `withLock()` sets: `c.get("lock")` is the held lock. */
export interface WithLockVariables {
  lock: LockHandle;
}

const OPTION_KEYS = ["key", "client", "waitMs", "leaseMs", "wait", "onBusy", "onFailure"] as const;

function defaultBusy(_c: unknown, busy: LockBusy): Response {
  return problem(
    409,
    "Locked",
    `"${busy.name}" is being worked on by another request; retry after ${busy.retryAfterSeconds} s.`,
    { "retry-after": String(busy.retryAfterSeconds) },
  );
}

/**
 * Acquires a lock before the handler and releases it after, also when the handler throws. The
 * request runs in an owner scope, so acquisitions of the same lock inside the handler re-enter.
 *
 * @param options.key - the lock name for the request (required)
 * @param options.client - a LockClient or `(c) => LockClient` (required)
 * @param options.waitMs - how long to wait for a busy lock, in ms (default 0)
 * @param options.leaseMs - lease in ms (default: watchdog mode)
 * @param options.onBusy - the answer when busy (default 409 with Retry-After)
 * @param options.onFailure - reports a failed release (default console.error)
 * @returns a middleware that sets `c.get("lock")` to the LockHandle (fencing token, `extend()`)
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
 * ```
 */
export function withLock<E extends Env = Env>(
  options: WithLockOptions<E>,
): MiddlewareHandler<E & { Variables: WithLockVariables }> {
  const given = checkOptions<WithLockOptions<E>>(options, "withLock options", OPTION_KEYS);
  const { key, client, wait, onBusy = defaultBusy, onFailure = logFailure } = given;
  if (
    typeof key !== "function" ||
    (typeof client !== "function" && typeof client?.lock !== "function")
  ) {
    throw new LockInputError(
      "withLock() needs `key: (c) => name` and `client` (a LockClient or (c) => LockClient).",
    );
  }
  const waitMs = given.waitMs === undefined ? 0 : checkDuration(given.waitMs, "waitMs", { min: 0 });
  const leaseMs = given.leaseMs === undefined ? undefined : checkLease(given.leaseMs);
  const clientFor = typeof client === "function" ? client : () => client;

  return createMiddleware<E & { Variables: WithLockVariables }>(async function withLock(c, next) {
    // The same request object: the extra variable does not change what the callbacks can see.
    const ctx = c as unknown as Context<E>;
    const locks = clientFor(ctx);
    const name = await key(ctx);
    return inRequestScope(locks, async () => {
      let held: LockHandle;
      try {
        held = await locks.lock(name).acquire({
          waitMs,
          ...(leaseMs === undefined ? {} : { leaseMs }),
          ...(wait === undefined ? {} : { wait }),
        });
      } catch (error) {
        if (error instanceof LockWaitTimeoutError || error instanceof LockBudgetExceededError) {
          const { holderTtlMs } = error;
          return onBusy(ctx, {
            name,
            holderTtlMs,
            retryAfterSeconds: retryAfterSeconds(holderTtlMs),
          });
        }
        throw error;
      }
      // Nested withLock() on one route: the inner handle shows while the inner lock is held.
      const outer = c.get("lock") as LockHandle | undefined;
      c.set("lock", held);
      try {
        await next();
      } finally {
        if (outer !== undefined) c.set("lock", outer);
        const error = await releaseOrRetry(c, held);
        if (error !== undefined) {
          const consequence =
            error instanceof LockNotHeldError
              ? "The lease ran out before the handler finished: the lock was not held to the end."
              : "The response was sent; the release is retried in the background.";
          await report(onFailure, { kind: "release", key: name, error, consequence }, ctx);
        }
      }
    });
  });
}

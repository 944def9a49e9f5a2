/**
 * The middleware typed for one app: an inline generic call cannot infer the route's Env (its
 * callbacks see `c.env` as `any`; honojs/hono#3202), so bind the app's type once, as Hono's
 * `createFactory<Env>()` does.
 */
import type { Env, Hono, MiddlewareHandler, Schema } from "hono";
import type { LockHandle } from "../hold/handle.js";
import type { ReleasableHold } from "./acquirable-lock.js";
import {
  type ConcurrencyLimitOptions,
  type ConcurrencyLimitVariables,
  concurrencyLimit,
} from "./concurrency-limit.js";
import type { WithVariables } from "./env.js";
import { type IdempotencyOptions, type IdempotencyVariables, idempotency } from "./idempotency.js";
import { type WithLockOptions, type WithLockVariables, withLock } from "./with-lock.js";

/** `withLock()`, `idempotency()` and `concurrencyLimit()` with the Env of one app. */
export interface AppMiddleware<E extends Env> {
  withLock<H extends ReleasableHold = LockHandle>(
    options: WithLockOptions<E, H>,
  ): MiddlewareHandler<WithVariables<E, WithLockVariables<H>>>;
  idempotency(
    options: IdempotencyOptions<E>,
  ): MiddlewareHandler<WithVariables<E, IdempotencyVariables>>;
  /** `concurrencyLimit()` whose callbacks see the app's context. */
  concurrencyLimit(
    options: ConcurrencyLimitOptions<E>,
  ): MiddlewareHandler<WithVariables<E, ConcurrencyLimitVariables>>;
}

/**
 * `withLock()`, `idempotency()` and `concurrencyLimit()` typed by `app` (only read for its type):
 * their option callbacks get the app's `c.env` and `c.var`, without type arguments.
 *
 * @example
 * ```ts
 * const app = new Hono<{ Bindings: Env }>();
 * const { idempotency, withLock } = middlewareFor(app);
 * app.post(
 *   "/webhooks/stripe",
 *   idempotency({ client: (c) => locksFor(c.env), key: stripeEventId() }),
 *   withLock({ client: (c) => locksFor(c.env), key: (c) => `customer:${c.req.header("x-customer")}` }),
 *   (c) => c.json({ token: c.get("lock").fencingToken }),
 * );
 * ```
 */
export function middlewareFor<E extends Env, S extends Schema, B extends string>(
  _app: Hono<E, S, B>,
): AppMiddleware<E> {
  return { withLock, idempotency, concurrencyLimit };
}

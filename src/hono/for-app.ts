/**
 * The middleware typed for one app. TypeScript cannot carry a route's Env into the options of a
 * generic middleware call written inline (`app.post(path, withLock({ client: (c) => … }))`: the
 * route's Env is itself still being inferred, so the plain functions' callbacks see `c.env` as
 * `any`, Hono's createMiddleware convention; see honojs/hono#3202). Binding the functions to the app's type once, as Hono's own
 * `createFactory<Env>()` does, gives every option callback the app's `c.env` and `c.var`.
 */
import type { Env, Hono, MiddlewareHandler, Schema } from "hono";
import type { LockHandle } from "../locks/handle.js";
import type { HeldLock } from "./acquirable-lock.js";
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
  /** `withLock()` whose callbacks see the app's context. */
  withLock<H extends HeldLock = LockHandle>(
    options: WithLockOptions<E, H>,
  ): MiddlewareHandler<WithVariables<E, WithLockVariables<H>>>;
  /** `idempotency()` whose callbacks see the app's context. */
  idempotency(
    options: IdempotencyOptions<E>,
  ): MiddlewareHandler<WithVariables<E, IdempotencyVariables>>;
  /** `concurrencyLimit()` whose callbacks see the app's context. */
  concurrencyLimit(
    options: ConcurrencyLimitOptions<E>,
  ): MiddlewareHandler<WithVariables<E, ConcurrencyLimitVariables>>;
}

/**
 * `withLock()`, `idempotency()` and `concurrencyLimit()` typed by `app`: their option callbacks get `c.env` as the
 * app's Bindings, without type arguments. The app is only read for its type.
 *
 * @param _app - the Hono app the middleware is for (`new Hono<{ Bindings: Env }>()`)
 * @returns the same three functions, typed for the app
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

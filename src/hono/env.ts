import type { Env } from "hono";

/**
 * The Env a middleware's callbacks see when the caller names none: `any`, as with Hono's own
 * `createMiddleware`. TypeScript cannot infer a route's Env into an inline middleware call, so
 * without this default `(c) => make(c.env)` in `new Hono<{ Bindings: Env }>()` would see
 * `object | undefined`. `middlewareFor(app)` gives the app's own Env instead.
 */
// biome-ignore lint/suspicious/noExplicitAny: Hono's convention for an Env the caller did not name
export type AnyEnv = any;

/**
 * The Env of the handlers after a middleware that sets variables `V`: the app's Env plus `V`,
 * or `V` alone when the middleware's Env was left to its `any` default (Hono merges it with the
 * app's Env then, and `c.get()` of the middleware's variables stays typed).
 */
export type WithVariables<E extends Env, V extends object> = 0 extends 1 & E
  ? { Variables: V }
  : E & { Variables: V };

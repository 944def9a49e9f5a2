import type { Env } from "hono";

/**
 * The Env when the caller names none: `any`, as Hono's `createMiddleware` does, since an inline
 * call cannot infer the route's Env (`c.env` would be `object | undefined`); see `middlewareFor`.
 */
// biome-ignore lint/suspicious/noExplicitAny: Hono's convention for an Env the caller did not name
export type AnyEnv = any;

/**
 * The Env after a middleware that sets variables `V`: the app's Env plus `V`, or `V` alone when
 * the Env is the `any` default (Hono merges it with the app's Env then).
 */
export type WithVariables<E extends Env, V extends object> = 0 extends 1 & E
  ? { Variables: V }
  : E & { Variables: V };

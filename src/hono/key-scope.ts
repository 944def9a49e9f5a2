/**
 * Which requests share an idempotency key. Webhook providers (Stripe, Standard Webhooks) send one
 * event id to every subscribed endpoint, so by default a key counts per route: the request's
 * method and the route pattern the middleware is registered on. The scope becomes part of the
 * lock name, and with it of every Redis key of the idempotency record:
 *
 *   route scope:   <namespace>:<METHOD> <route pattern>:<key>   e.g. idempotency:POST /webhooks/stripe:evt_1
 *   shared scope:  <namespace>:<key>                           (the layout of edgelock 0.1)
 *   with a tenant: <namespace>:@<tenant>:…
 *
 * Parts are escaped so that no two scopes give the same name.
 */
import type { Context, Env } from "hono";

/**
 * `"route"`: keys count per method and route pattern. `"shared"`: every route guarded by
 * middleware with the same `namespace` shares its keys.
 */
export type IdempotencyScope = "route" | "shared";

/** The lock name of idempotency key `key` in the scope of request `c`. */
export function scopedLockName<E extends Env>(
  c: Context<E>,
  key: string,
  scope: { namespace: string; scope: IdempotencyScope; tenant: string | undefined },
): string {
  const parts = [scope.namespace];
  if (scope.tenant !== undefined) parts.push(`@${escapePart(scope.tenant)}`);
  // c.req.routePath is the pattern of the route being dispatched: this middleware's own
  // registration. (hono/route's routePath() needs Hono 4.8; the peer range starts at 4.6.)
  if (scope.scope === "route") parts.push(escapePart(`${c.req.method} ${c.req.routePath}`));
  parts.push(escapeKey(key));
  return parts.join(":");
}

/** Braces would move the hash tag; `%` escapes them. The rest of printable ASCII stays. */
export function escapeKey(key: string): string {
  return percentEscape(key, /[%{}]/g);
}

/** A scope part also escapes `:` (it separates the parts) and `@` (it marks the tenant). */
function escapePart(part: string): string {
  return percentEscape(part, /[%{}:@]/g);
}

function percentEscape(text: string, special: RegExp): string {
  return text.replace(special, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}

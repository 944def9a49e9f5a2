/**
 * Which requests share an idempotency key. Providers send one event id to every subscribed
 * endpoint, so by default a key counts per method and route pattern, as part of the lock name:
 *
 *   route scope:   <namespace>:<METHOD> <route pattern>:<key>   e.g. idempotency:POST /webhooks/stripe:evt_1
 *   shared scope:  <namespace>:<key>                           (the layout of edgelock 0.1)
 *   with a tenant: <namespace>:@<tenant>:…
 *
 * Every part but the namespace is escaped — `:` (the separator), `@` (the tenant mark), `%` and
 * braces (the hash tag) — so that the parts of a name are found again by splitting at `:`: no
 * client-chosen key can spell another scope's name (`POST /webhooks/billing:evt_1` under the
 * shared scope is `…:POST /webhooks/billing%3Aevt_1`, not the route scope's record of `evt_1`).
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
  parts.push(escapePart(key));
  return parts.join(":");
}

/** Escapes braces (the hash tag), `:`, `@` and `%`; the rest stays readable. */
export function escapePart(part: string): string {
  return percentEscape(part, /[%{}:@]/g);
}

function percentEscape(text: string, special: RegExp): string {
  return text.replace(special, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}

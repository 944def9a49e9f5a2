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
import { LockInputError } from "../errors.js";
import { problem } from "./responses.js";

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

/**
 * The lock name of a key a request gave (`withLock({ key })`, `concurrencyLimit({ key })`): braces
 * (they delimit the hash tag, so a name refuses them) percent-escaped, `counter:{a}` →
 * `counter:%7Ba%7D`. Only braces: every name that was valid before stays the same lock across a
 * deploy; `a{b` and `a%7Bb` share one lock, which only ever excludes more.
 */
export function requestLockName(key: string): string {
  return percentEscape(key, /[{}]/g);
}

/**
 * The lock a request's key names, or a 400 when the text, once escaped, still names none (empty,
 * longer than a name may be, ill-formed Unicode): the request's fault. A key function that gives
 * no text at all is the code's fault, and throws (a 500 through the app's error handler).
 */
export async function lockOfKey<L>(
  key: string | Promise<string>,
  named: (name: string) => L,
): Promise<{ lock: L } | { refused: Response }> {
  const text = await key;
  if (typeof text !== "string") return { lock: named(text) };
  try {
    return { lock: named(requestLockName(text)) };
  } catch (error) {
    if (!(error instanceof LockInputError)) throw error;
    return {
      refused: problem(400, "Bad request", `This request names no valid lock: ${error.message}`),
    };
  }
}

/** Escapes braces (the hash tag), `:`, `@` and `%`; the rest stays readable. */
export function escapePart(part: string): string {
  return percentEscape(part, /[%{}:@]/g);
}

function percentEscape(text: string, special: RegExp): string {
  return text.replace(special, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}

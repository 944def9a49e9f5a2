/**
 * One owner per request: acquisitions inside the request (the middleware's and the handler's
 * own) share the request's owner, so nested acquisitions of one lock re-enter while concurrent
 * requests stay apart.
 */

import type { PlainLockClient } from "../plain-lock-client.js";

/**
 * Runs `fn` in an owner scope of `client`: the enclosing one if there is one already (an outer
 * middleware opened it), else a new one. Without AsyncLocalStorage (Workers without
 * `nodejs_compat`) it throws LockScopeUnavailableError before any request: running unscoped
 * would give the handler's own acquisitions of the request's lock another owner, so they would
 * wait out their `waitMs` against their own request.
 */
export async function inRequestScope<T>(client: PlainLockClient, fn: () => Promise<T>): Promise<T> {
  if (client.currentOwner !== undefined) return fn();
  return client.scope(fn);
}

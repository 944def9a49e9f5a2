/**
 * One owner per request: acquisitions inside the request (the middleware's and the handler's
 * own) share the request's owner, so nested acquisitions of one lock re-enter while concurrent
 * requests stay apart.
 */

import type { PlainLockClient } from "../plain-lock-client.js";
import { scopesAvailable, scopeUnavailable } from "../platform.js";

/**
 * Runs `fn` in the enclosing owner scope of `client`, else a new one. Without AsyncLocalStorage
 * it throws LockScopeUnavailableError: unscoped, the handler's own acquisitions of the request's
 * lock would get another owner and wait out their `waitMs` against their own request.
 */
export async function inRequestScope<T>(client: PlainLockClient, fn: () => Promise<T>): Promise<T> {
  if (client.currentOwner !== undefined) return fn();
  if (!scopesAvailable()) {
    throw scopeUnavailable(
      "withLock({ client }) (one owner scope per request, so the handler's acquisitions re-enter)",
      "use withLock({ lock: (c) => … }) without client, and pass owner to nested acquisitions",
    );
  }
  return client.scope(fn);
}

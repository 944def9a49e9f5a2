/**
 * One owner per request: acquisitions inside the request (the middleware's and the handler's
 * own) share the request's owner, so nested acquisitions of one lock re-enter while concurrent
 * requests stay apart.
 */

import { LockInputError } from "../errors.js";
import type { LockClient } from "../lock-client.js";

/**
 * Runs `fn` in an owner scope of `client`: the enclosing one if there is one already (an outer
 * middleware opened it), else a new one. Without AsyncLocalStorage (Workers without
 * `nodejs_compat`) it runs `fn` unscoped: each acquisition then gets a fresh owner.
 */
export async function inRequestScope<T>(client: LockClient, fn: () => Promise<T>): Promise<T> {
  if (client.currentOwner !== undefined) return fn();
  let entered = false;
  try {
    return await client.scope(() => {
      entered = true;
      return fn();
    });
  } catch (error) {
    if (!entered && error instanceof LockInputError) return fn();
    throw error;
  }
}

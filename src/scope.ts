/**
 * Ambient owners: inside `client.scope(fn)` acquisitions without an explicit owner take the
 * scope's, so nested calls of one flow re-enter while concurrent requests stay apart.
 *
 * AsyncLocalStorage is reached through `process.getBuiltinModule`, so that no bundler must
 * resolve `node:async_hooks` (Node ≥ 20.16, Bun, Deno, Workers with `nodejs_compat`).
 *
 * One storage per module instance, not per client: a client used inside `a.scope()` takes `a`'s
 * owner.
 */
import { LockScopeUnavailableError } from "./errors.js";

/** One scope: its owner, and the request it serves (the outermost scope's, shared inward). */
interface ScopeFrame {
  readonly owner: string;
  readonly request: object;
}

interface OwnerStorage {
  getStore(): ScopeFrame | undefined;
  run<R>(store: ScopeFrame, fn: () => R): R;
}

type AsyncHooksModule = { AsyncLocalStorage: new () => OwnerStorage };
type ProcessWithBuiltins = { getBuiltinModule?: (id: string) => unknown };

function createStorage(): OwnerStorage | undefined {
  const proc = (globalThis as { process?: ProcessWithBuiltins }).process;
  let hooks: AsyncHooksModule | undefined;
  try {
    hooks = proc?.getBuiltinModule?.("node:async_hooks") as AsyncHooksModule | undefined;
  } catch {
    // A runtime with a partial `process` (a Worker without nodejs_compat) may refuse the module.
    hooks = undefined;
  }
  return hooks?.AsyncLocalStorage ? new hooks.AsyncLocalStorage() : undefined;
}

let storage: OwnerStorage | undefined | null = null;

function ownerStorage(): OwnerStorage | undefined {
  if (storage === null) storage = createStorage();
  return storage;
}

/** The innermost scope's. */
export function currentScopeOwner(): string | undefined {
  return ownerStorage()?.getStore()?.owner;
}

/**
 * The request the code runs for: the outermost enclosing scope (its nested scopes, and every
 * client used in them, share it); undefined outside any scope.
 */
export function currentRequest(): object | undefined {
  return ownerStorage()?.getStore()?.request;
}

/** Whether this runtime gives owner scopes (AsyncLocalStorage). */
export function scopesAvailable(): boolean {
  return ownerStorage() !== undefined;
}

/**
 * The error for `what` (the API the user called) where the runtime has no AsyncLocalStorage, in
 * the runtime's own terms: a Worker's flag on Workers, elsewhere the explicit owner.
 */
export function scopeUnavailable(what: string, instead = "pass owner"): LockScopeUnavailableError {
  const agent = (globalThis as { navigator?: { userAgent?: unknown } }).navigator?.userAgent;
  const remedy =
    agent === "Cloudflare-Workers"
      ? `add compatibility_flags = ["nodejs_compat"] to wrangler.toml, or ${instead}`
      : `this runtime has none (Node, Bun, Deno and Workers with nodejs_compat have it): ${instead}`;
  return new LockScopeUnavailableError(`${what} needs AsyncLocalStorage: ${remedy}.`);
}

export function runWithOwner<R>(owner: string, fn: () => R): R {
  const store = ownerStorage();
  if (!store) throw scopeUnavailable("client.scope()");
  return store.run({ owner, request: store.getStore()?.request ?? {} }, fn);
}

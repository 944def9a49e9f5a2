/**
 * Ambient owners. Two acquisitions re-enter each other only when they share an owner; inside
 * `client.scope(fn)` every acquisition without an explicit owner uses the scope's owner, so nested
 * calls in one logical flow (one request) re-enter, while concurrent requests stay apart.
 *
 * The scope travels with async work through AsyncLocalStorage, reached through
 * `process.getBuiltinModule` so that no bundler must resolve `node:async_hooks` (Node ≥ 20.16,
 * Bun, Deno, and Workers with the `nodejs_compat` flag have it).
 *
 * There is one storage per module instance, not per client: a scope is ambient to every
 * LockClient of the process (a client created or used inside `a.scope()` takes `a`'s owner).
 */
import { LockScopeUnavailableError } from "./errors.js";

interface OwnerStorage {
  getStore(): string | undefined;
  run<R>(store: string, fn: () => R): R;
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

/** The owner of the innermost scope around the caller, if any. */
export function currentScopeOwner(): string | undefined {
  return ownerStorage()?.getStore();
}

/** Runs `fn` with `owner` as the ambient owner. */
export function runWithOwner<R>(owner: string, fn: () => R): R {
  const store = ownerStorage();
  if (!store) {
    throw new LockScopeUnavailableError(
      "scope() needs AsyncLocalStorage: add the nodejs_compat compatibility flag, or pass owner.",
    );
  }
  return store.run(owner, fn);
}

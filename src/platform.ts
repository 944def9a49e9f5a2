/**
 * What edgelock takes from the JavaScript runtime, in one place: unguessable ids (Web Crypto),
 * timers, and the async context that carries a scope's owner (AsyncLocalStorage).
 */
import { LockScopeUnavailableError } from "./errors.js";

// Unguessable identifiers from the runtime's CSPRNG (Web Crypto: Workers, Node, Deno, Bun).

function randomHex(bytes: number): string {
  const buffer = crypto.getRandomValues(new Uint8Array(bytes));
  let hex = "";
  for (const byte of buffer) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/** A new owner token: 128 random bits, 32 hex characters. */
export function newOwnerToken(): string {
  return randomHex(16);
}

/** A new operation id (96 random bits): names one mutating call and all its re-sends. */
export function newOperationId(): string {
  return randomHex(12);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/*
 * Ambient owners: inside `client.scope(fn)` acquisitions without an explicit owner take the
 * scope's, so nested calls of one flow re-enter while concurrent requests stay apart.
 *
 * AsyncLocalStorage is reached through `process.getBuiltinModule`, so that no bundler must
 * resolve `node:async_hooks` (Node ≥ 20.16, Bun, Deno, Workers with `nodejs_compat`), else as the
 * global `AsyncLocalStorage` (Next.js's Edge runtime sets it; on Vercel's Edge runtime, which has
 * `node:async_hooks` but no `process`, one line of the user's sets it).
 *
 * One storage per module instance, not per client: a client used inside `a.scope()` takes `a`'s
 * owner.
 */

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

type StorageClass = new () => OwnerStorage;

function createStorage(): OwnerStorage | undefined {
  const proc = (globalThis as { process?: ProcessWithBuiltins }).process;
  let hooks: AsyncHooksModule | undefined;
  try {
    hooks = proc?.getBuiltinModule?.("node:async_hooks") as AsyncHooksModule | undefined;
  } catch {
    // A runtime with a partial `process` (a Worker without nodejs_compat) may refuse the module.
    hooks = undefined;
  }
  const found =
    hooks?.AsyncLocalStorage ??
    (globalThis as { AsyncLocalStorage?: StorageClass }).AsyncLocalStorage;
  return typeof found === "function" ? new found() : undefined;
}

let storage: OwnerStorage | undefined;

/** Found once; looked for again while missing (a user's global may be set after import). */
function ownerStorage(): OwnerStorage | undefined {
  storage ??= createStorage();
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

/** Where the code runs, as far as the error's advice differs. */
function runtimeName(): "workers" | "vercel-edge" | "other" {
  const agent = (globalThis as { navigator?: { userAgent?: unknown } }).navigator?.userAgent;
  if (agent === "Cloudflare-Workers") return "workers";
  // Vercel's documented check for its Edge runtime (and the edge-runtime package's VM).
  if (typeof (globalThis as { EdgeRuntime?: unknown }).EdgeRuntime === "string") {
    return "vercel-edge";
  }
  return "other";
}

/**
 * The error for `what` (the API the user called) where the runtime has no AsyncLocalStorage, in
 * the runtime's own terms: a Worker's flag on Workers; on Vercel's Edge runtime, its
 * `node:async_hooks` made global; elsewhere the explicit owner.
 */
export function scopeUnavailable(what: string, instead = "pass owner"): LockScopeUnavailableError {
  const remedies = {
    workers: `add compatibility_flags = ["nodejs_compat"] to wrangler.toml, or ${instead}`,
    "vercel-edge":
      'Vercel\'s Edge runtime has it in "node:async_hooks" but edgelock cannot import it there: ' +
      "set globalThis.AsyncLocalStorage = AsyncLocalStorage (imported from node:async_hooks) " +
      `before the first request, or ${instead}`,
    other: `this runtime has none (Node, Bun, Deno and Workers with nodejs_compat have it): ${instead}`,
  };
  return new LockScopeUnavailableError(
    `${what} needs AsyncLocalStorage: ${remedies[runtimeName()]}.`,
  );
}

export function runWithOwner<R>(owner: string, fn: () => R): R {
  const store = ownerStorage();
  if (!store) throw scopeUnavailable("client.scope()");
  return store.run({ owner, request: store.getStore()?.request ?? {} }, fn);
}

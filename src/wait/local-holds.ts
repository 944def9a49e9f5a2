/**
 * The holds a client has live, by lock and owner, so that a wait that times out behind one of
 * them can say it waited for its own client: a nested acquisition or a write after a read taken
 * under another owner (outside one `client.scope()`) never comes free while the caller waits.
 */
import type { LockRuntime } from "./runtime.js";

/** Per client: lock key → owner → live handles. */
const liveHolds = new WeakMap<LockRuntime, Map<string, Map<string, number>>>();

function holdsOf(runtime: LockRuntime): Map<string, Map<string, number>> {
  let holds = liveHolds.get(runtime);
  if (holds === undefined) {
    holds = new Map();
    liveHolds.set(runtime, holds);
  }
  return holds;
}

function lockKey(runtime: LockRuntime, name: string): string {
  return `${runtime.prefix}:{${name}}`;
}

/** Counts a live handle of `owner` on `name`; the function returned forgets it (once). */
export function noteLocalHold(runtime: LockRuntime, name: string, owner: string): () => void {
  const key = lockKey(runtime, name);
  const holds = holdsOf(runtime);
  const owners = holds.get(key) ?? new Map<string, number>();
  holds.set(key, owners);
  owners.set(owner, (owners.get(owner) ?? 0) + 1);
  let forgotten = false;
  return () => {
    if (forgotten) return;
    forgotten = true;
    const current = holds.get(key);
    const left = (current?.get(owner) ?? 1) - 1;
    if (current === undefined) return;
    if (left > 0) current.set(owner, left);
    else current.delete(owner);
    if (current.size === 0) holds.delete(key);
  };
}

/** Whether the client has a live handle on `name` of an owner other than `owner`. */
export function heldByOtherLocalOwner(runtime: LockRuntime, name: string, owner: string): boolean {
  const owners = holdsOf(runtime).get(lockKey(runtime, name));
  if (owners === undefined) return false;
  for (const holder of owners.keys()) if (holder !== owner) return true;
  return false;
}

/**
 * The chaos adapter of RedLock over the run's databases (3). The server state it reports counts a
 * key held by an owner only where a majority of databases hold it: every hold the client trusts
 * must be seen so. No single fencing token exists, so the fenced store's check is skipped; the
 * sections' exclusion and the majority are what is checked.
 */
import { type QuorumLockHandle, RedLock } from "../../../src/index.js";
import { lockKeys } from "../../../src/locks/keys.js";
import type { ChaosDatabase } from "../environment.js";
import type { ChaosIsolate, ChaosPrimitive } from "../primitive.js";
import { type HoldMode, type KeyState, readKeys } from "../server-state.js";
import { acquireHold, type HeldHandle, mappedOpener } from "./hold.js";

function held(handle: QuorumLockHandle): HeldHandle {
  return {
    owner: handle.owner,
    fencingToken: undefined,
    leaseMs: handle.leaseMs,
    renewing: handle.renewing,
    expiresAt: handle.validUntil,
    validUntil: () => handle.validUntil,
    signal: handle.signal,
    extend: (ms) => handle.extend(ms),
    release: () => handle.release(),
  };
}

export function redLockPrimitive(
  prefix: string,
  databases: readonly ChaosDatabase[],
): ChaosPrimitive {
  const quorum = Math.floor(databases.length / 2) + 1;
  const redLocks = new WeakMap<ChaosIsolate, RedLock>();
  const redLockOf = (isolate: ChaosIsolate) => {
    let redLock = redLocks.get(isolate);
    if (!redLock) {
      redLock = new RedLock(isolate.clients);
      redLocks.set(isolate, redLock);
    }
    return redLock;
  };
  const layout = (key: string) => ({ key, hash: lockKeys(prefix, key).lock });
  const perDatabase = (keys: readonly string[]) =>
    Promise.all(databases.map(({ observer }) => readKeys(observer.raw, keys.map(layout))));
  return {
    name: "RedLock",
    capacity: 1,
    databases: databases.length,
    acquire: (isolate, key, plan) =>
      acquireHold(
        (isolate) => mappedOpener(redLockOf(isolate).lock(key), held),
        isolate,
        key,
        plan,
      ),
    // Any database still holding it counts: a dead holder is free only when every one is.
    async isHeldBy(key, owner) {
      const states = await perDatabase([key]);
      return states.some((state) => state.get(key)!.holders.has(owner));
    },
    async holders(key) {
      const states = await perDatabase([key]);
      return [...new Set(states.flatMap((state) => [...state.get(key)!.holders.keys()]))];
    },
    async state(keys) {
      const states = await perDatabase(keys);
      const combined = new Map<string, KeyState>();
      for (const key of keys) {
        const counts = new Map<string, number>();
        for (const state of states) {
          for (const owner of state.get(key)!.holders.keys()) {
            counts.set(owner, (counts.get(owner) ?? 0) + 1);
          }
        }
        const holders = new Map<string, HoldMode>();
        for (const [owner, count] of counts) if (count >= quorum) holders.set(owner, "exclusive");
        combined.set(key, { holders, queue: new Map(), stale: new Set() });
      }
      return combined;
    },
  };
}

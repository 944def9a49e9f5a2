/**
 * The chaos adapter of RedLock over the run's databases (3). The server state it reports counts a
 * key held by an owner only where a majority of databases hold it: every hold the client trusts
 * must be seen so. No single fencing token exists, so the fenced store's check is skipped; the
 * sections' exclusion and the majority are what is checked.
 *
 * Releases and grants are per database: a release that reached a majority leaves the copy of a
 * database that refused it, never got it or ran a grant after it, until that copy's lease ends.
 * So the adapter times each database's requests itself (at its hang proxy: when each request
 * naming an owner arrived, and when the database's answer or failure came back, after which it
 * can no longer run) and states the bound of a copy per database (`copyBound`): one lease after
 * the last request naming the owner that the database answered. Every such request counts, also
 * those that reached it after the holder died: a re-send of a request in flight at the crash
 * (the library's retries run on, unlike a crashed process's) or a late grant's undo. A crash
 * kills the holder's renewer, so no renewal is sent after it.
 */

import { lockKeys } from "../../../src/hold/script.js";
import { type QuorumLockHandle, RedLock } from "../../../src/index.js";
import type { ChaosDatabase } from "../environment.js";
import type { ProxiedRequest } from "../hang-proxy.js";
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
  const requestsOf = requestsByOwner(databases);
  const layout = (key: string) => ({ key, hash: lockKeys(prefix, key).lock });
  const perDatabase = (keys: readonly string[]) =>
    Promise.all(databases.map(({ observer }) => readKeys(observer.raw, keys.map(layout))));
  return {
    name: "RedLock",
    capacity: 1,
    databases: databases.length,
    siblingsOnOneKey: true,
    acquire: (isolate, key, plan) =>
      acquireHold(
        (isolate) => mappedOpener(redLockOf(isolate).lock(key), held),
        isolate,
        key,
        plan,
      ),
    copyBound(owner, leaseMs) {
      let bound = Number.NEGATIVE_INFINITY;
      for (const request of requestsOf.get(owner) ?? []) {
        if (!request.forwarded) continue;
        bound = Math.max(bound, (request.settledAt ?? Number.POSITIVE_INFINITY) + leaseMs);
      }
      return bound;
    },
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

/** Owner tokens as `LockClient.newOwner()` makes them (32 hex digits). */
const OWNER_TOKEN = /\b[0-9a-f]{32}\b/g;

/** Every request to any database, indexed by the owner tokens its body names. */
function requestsByOwner(databases: readonly ChaosDatabase[]): Map<string, ProxiedRequest[]> {
  const byOwner = new Map<string, ProxiedRequest[]>();
  for (const { proxy } of databases) {
    proxy.onRequest((request) => {
      for (const [owner] of request.body.matchAll(OWNER_TOKEN)) {
        let requests = byOwner.get(owner);
        if (requests === undefined) {
          requests = [];
          byOwner.set(owner, requests);
        }
        requests.push(request);
      }
    });
  }
  return byOwner;
}

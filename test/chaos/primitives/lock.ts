/**
 * The chaos adapters of the kinds whose handles are LockHandles: the reentrant lock
 * (`client.lock`), the fair lock (`client.fairLock`) and the read-write lock (`readWriteLock`:
 * a section asks for a read hold with probability `sharedRate`, else for the write lock).
 */
import type { LockClient } from "../../../src/index.js";
import { fairLockKeys, lockKeys, readWriteLockKeys } from "../../../src/locks/keys.js";
import type { Observer } from "../environment.js";
import type { ChaosPrimitive } from "../primitive.js";
import { type KeyLayout, readKeys } from "../server-state.js";
import { acquireHold, type OpenerFactory } from "./hold.js";

export type { Observer };

/** A primitive over one database whose holds are LockHandles. */
function lockFamily(
  name: string,
  observer: Observer,
  open: OpenerFactory,
  layout: (key: string) => KeyLayout,
  isHeldBy: (client: LockClient, key: string, owner: string) => Promise<boolean>,
  sharedRate = 0,
): ChaosPrimitive {
  return {
    name,
    capacity: 1,
    sharedRate,
    acquire: (isolate, key, plan) => acquireHold(open, isolate, key, plan),
    isHeldBy: (key, owner) => isHeldBy(observer.client, key, owner),
    async holders(key) {
      const state = (await readKeys(observer.raw, [layout(key)])).get(key)!;
      return [...state.holders.keys()];
    },
    state: (keys) => readKeys(observer.raw, keys.map(layout)),
  };
}

export function reentrantLockPrimitive(prefix: string, observer: Observer): ChaosPrimitive {
  return lockFamily(
    "lock",
    observer,
    (isolate, key) => isolate.client.lock(key),
    (key) => ({ key, hash: lockKeys(prefix, key).lock }),
    (client, key, owner) => client.lock(key).isHeldBy(owner),
  );
}

export function fairLockPrimitive(prefix: string, observer: Observer): ChaosPrimitive {
  return lockFamily(
    "fair lock",
    observer,
    (isolate, key) => isolate.client.fairLock(key),
    (key) => {
      const keys = fairLockKeys(prefix, key);
      return {
        key,
        hash: keys.lock,
        queue: keys.queue,
        timeouts: keys.timeouts,
        fence: keys.fence,
      };
    },
    (client, key, owner) => client.fairLock(key).isHeldBy(owner),
  );
}

/** Read holds in `sharedRate` of the sections (writer preference on, the default). */
export function readWriteLockPrimitive(
  prefix: string,
  observer: Observer,
  sharedRate = 0.6,
): ChaosPrimitive {
  return lockFamily(
    "read-write lock",
    observer,
    (isolate, key, plan) => {
      const rw = isolate.client.readWriteLock(key);
      return plan.shared ? rw.readLock() : rw.writeLock();
    },
    (key) => {
      const keys = readWriteLockKeys(prefix, key);
      return { key, hash: keys.lock, reads: keys.reads };
    },
    async (client, key, owner) => {
      const rw = client.readWriteLock(key);
      const [writing, reading] = await Promise.all([
        rw.writeLock().isHeldBy(owner),
        rw.readLock().isHeldBy(owner),
      ]);
      return writing || reading;
    },
    sharedRate,
  );
}

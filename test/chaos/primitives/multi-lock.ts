/**
 * The chaos adapter of the multi-lock: workload key `key-<i>` is the multi-lock of the member
 * locks `member-<i>` and `member-<i+1 mod n>`, so that neighbouring keys contend for a shared
 * member. Its fenced store is guarded by `member-<i>`'s token (every holder of `key-<i>` holds
 * that member, so its tokens grow across them). Exclusion is checked per member.
 */

import { lockKeys } from "../../../src/hold/script.js";
import type { MultiLockHandle } from "../../../src/index.js";
import type { Observer } from "../environment.js";
import type { ChaosPrimitive } from "../primitive.js";
import { readKeys } from "../server-state.js";
import { acquireHold, type HeldHandle, mappedOpener } from "./hold.js";

function indexOf(key: string): number {
  const index = Number(key.slice(key.lastIndexOf("-") + 1));
  if (!Number.isInteger(index)) throw new Error(`chaos: not a workload key: ${key}`);
  return index;
}

function held(handle: MultiLockHandle): HeldHandle {
  return {
    owner: handle.owner,
    fencingToken: handle.members[0]?.fencingToken,
    leaseMs: handle.leaseMs,
    renewing: handle.renewing,
    expiresAt: handle.expiresAt,
    signal: handle.signal,
    extend: (ms) => handle.extend(ms),
    release: () => handle.release(),
  };
}

export function multiLockPrimitive(
  prefix: string,
  observer: Observer,
  keyCount: number,
): ChaosPrimitive {
  const membersOf = (key: string): string[] => {
    const index = indexOf(key);
    const members = [`member-${index}`, `member-${(index + 1) % keyCount}`];
    return keyCount === 1 ? members.slice(0, 1) : members;
  };
  const layout = (member: string) => ({ key: member, hash: lockKeys(prefix, member).lock });
  return {
    name: "multi-lock",
    capacity: 1,
    keysOf: membersOf,
    siblingsOnOneKey: true,
    acquire: (isolate, key, plan) =>
      acquireHold(
        (isolate) =>
          mappedOpener(
            isolate.client.multiLock(membersOf(key).map((member) => isolate.client.lock(member))),
            held,
          ),
        isolate,
        key,
        plan,
      ),
    // Any member still held counts: a dead holder is free only when every member is.
    async isHeldBy(key, owner) {
      const states = await readKeys(observer.raw, membersOf(key).map(layout));
      return [...states.values()].some((state) => state.holders.has(owner));
    },
    async holders(key) {
      const states = await readKeys(observer.raw, membersOf(key).map(layout));
      return [...new Set([...states.values()].flatMap((state) => [...state.holders.keys()]))];
    },
    state: (members) => readKeys(observer.raw, members.map(layout)),
  };
}

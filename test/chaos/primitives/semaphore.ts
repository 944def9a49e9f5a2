/**
 * The chaos adapter of the counting semaphore (`client.semaphore`, capacity `permits`, one permit
 * per section). Its server state is the semaphore's leases: every live one takes a place of the
 * capacity, so the exclusion checks count at most `permits` holders at once. A "re-entry" is one
 * more permit for the same owner (semaphores do not re-enter), which the workload treats as a
 * hold of its own. No force release; no fencing-counter reading (tokens of concurrent holders
 * interleave, so "the latest token is mine" does not apply).
 */
import { semaphoreKeys } from "../../../src/locks/semaphore/keys.js";
import type { Observer } from "../environment.js";
import type { ChaosPrimitive } from "../primitive.js";
import { readKeys } from "../server-state.js";
import { acquireHold } from "./hold.js";

export function semaphorePrimitive(
  prefix: string,
  observer: Observer,
  permits: number,
): ChaosPrimitive {
  const layout = (key: string) => {
    const keys = semaphoreKeys(prefix, key);
    return { key, leases: keys.leases, queue: keys.queue, timeouts: keys.timeouts };
  };
  const holders = async (key: string) => {
    const state = (await readKeys(observer.raw, [layout(key)])).get(key)!;
    return [...state.holders.keys()];
  };
  return {
    name: `semaphore (${permits} permits)`,
    capacity: permits,
    acquire: (isolate, key, plan) =>
      acquireHold(
        (isolate) => isolate.client.semaphore(key, { initialPermits: permits }),
        isolate,
        key,
        plan,
      ),
    isHeldBy: async (key, owner) => (await holders(key)).includes(owner),
    holders,
    state: (keys) => readKeys(observer.raw, keys.map(layout)),
  };
}

/**
 * The chaos adapter of the counting semaphore (`client.semaphore`, capacity `permits`, one permit
 * per section). Its server state is the semaphore's leases: every live one takes a place of the
 * capacity, so the exclusion checks count at most `permits` holders at once. A "re-entry" is one
 * more permit for the same owner (semaphores do not re-enter), which the workload treats as a
 * hold of its own. No force release; no fencing-counter reading (tokens of concurrent holders
 * interleave, so "the latest token is mine" does not apply). With `push` (the `semaphore-sub`
 * kind), its waiters wait in push mode over the semaphore's hand-off channels, as the locks' do
 * (primitives/lock.ts): a release grants the parked waiters its permits cover. With
 * `adjustable` (capacity-changes.ts), an administrator changes the capacity during the run, some
 * owners ask for 2 or 3 permits, and the readings carry the capacity, each hold's permits and
 * grant time, and each waiter's permits.
 */
import { semaphoreKeys } from "../../../src/locks/semaphore/keys.js";
import { demandOf } from "../capacity-changes.js";
import type { Observer } from "../environment.js";
import type { ChaosPrimitive, HoldPlan } from "../primitive.js";
import { readKeys } from "../server-state.js";
import { acquireHold, type Opener, type OpenerFactory } from "./hold.js";
import { type PushWaiting, waitingWith } from "./lock.js";

export function semaphorePrimitive(
  prefix: string,
  observer: Observer,
  permits: number,
  push?: PushWaiting,
  adjustable?: { readonly multiPermitRate: number; readonly max: number },
): ChaosPrimitive {
  const layout = (key: string) => {
    const keys = semaphoreKeys(prefix, key);
    return {
      key,
      leases: keys.leases,
      queue: keys.queue,
      timeouts: keys.timeouts,
      granted: keys.fence,
      capacity: keys.capacity,
    };
  };
  // Scope siblings ask for one permit each, so that they can still hold together.
  const demand = (plan: HoldPlan) =>
    adjustable === undefined || plan.sibling === true
      ? 1
      : demandOf(plan.owner, adjustable.multiPermitRate, permits);
  const holders = async (key: string) => {
    const state = (await readKeys(observer.raw, [layout(key)])).get(key)!;
    return [...state.holders.keys()];
  };
  const open: OpenerFactory = (isolate, key, plan) => {
    const semaphore = isolate.client.semaphore(key, { initialPermits: permits });
    const asking = demand(plan);
    const opener: Opener = {
      acquire: (options) => semaphore.acquire({ ...options, permits: asking }),
      tryAcquire: (options) => semaphore.tryAcquire({ ...options, permits: asking }),
    };
    return push ? waitingWith(opener, push) : opener;
  };
  const named = push ? `${permits} permits, ${push.label}` : `${permits} permits`;
  return {
    name: adjustable === undefined ? `semaphore (${named})` : `semaphore (${named}, resized)`,
    capacity: adjustable?.max ?? permits,
    ...(adjustable === undefined
      ? {}
      : { adjustableCapacity: { base: permits, max: adjustable.max }, demandOf: demand }),
    ...(push ? { figures: push.figures, parks: true } : {}),
    ...(push?.killParkedRate === undefined ? {} : { killParkedRate: push.killParkedRate }),
    acquire: (isolate, key, plan) => acquireHold(open, isolate, key, plan),
    isHeldBy: async (key, owner) => (await holders(key)).includes(owner),
    holders,
    state: (keys) => readKeys(observer.raw, keys.map(layout)),
  };
}

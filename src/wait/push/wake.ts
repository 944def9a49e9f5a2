/**
 * Push mode's choice, per acquisition, of how a hand-off reaches the waiter: a blocking pop
 * (parking.ts), a subscription (listening.ts), or neither (it polls). docs/push.md.
 */
import type { LockKeys } from "../../hold/keys.js";
import { keyLockingKnown, runsUnderKeyLocking } from "../../transport/key-locking.js";
import { canBlock, canSubscribe } from "../../transport/redis-like.js";
import type { WaitPlan } from "../attempt.js";
import type { LockRuntime } from "../runtime.js";
import { Listening } from "./listening.js";
import { Parking } from "./parking.js";

/** How one acquisition is woken in push mode. */
export type Park = Parking | Listening;

/**
 * What push mode needs of a kind's keys: the name its client-wide state goes by (`lock`), its
 * hand-off channels, and the wake lists of waiters on a blocking pop, where the kind's hand-off
 * pushes to them (a semaphore's announces on its channels only).
 */
export type WaitKeys = Pick<LockKeys, "lock" | "handOffChannels"> & Partial<Pick<LockKeys, "wake">>;

/** parkingFor's answer while the server has not shown which channel works: ask again later. */
export const NOT_YET = "notYet";

/**
 * Undefined where the acquisition polls. `keepsTurn`: the kind serves its waiters in order (the
 * fair lock), so a subscribed waiter next in line parks within the claim window (Listening).
 * NOT_YET where `wakeBy: "auto"` must choose between a pop and a subscription before the server
 * has shown whether it runs scripts under Upstash's per-key locking: the first attempt's reply
 * shows it (the first script asks with the flag), so the acquisition waits by its turn until
 * then and asks again; a guess would park on a pop that the flagged hand-off never fills (a loopback
 * URL on the local server's `upstash` profile looks like any Redis behind a proxy).
 */
export function parkingFor(
  runtime: LockRuntime,
  keys: WaitKeys,
  plan: WaitPlan,
  keepsTurn = false,
): Park | undefined | typeof NOT_YET {
  const { ctx } = runtime;
  const { redis } = ctx;
  const { mode, wakeBy } = plan.policy;
  if (!plan.mayWait || mode === "poll") return undefined;
  // No pop under Upstash's per-key locking (a hand-off there cannot name a waiter's list).
  const { wake } = keys;
  const popsMayServe = wake !== undefined && canBlock(redis) && runtime.blockingPops.served;
  if (wakeBy === "auto" && popsMayServe && !keyLockingKnown(redis)) return NOT_YET;
  const popsServe = popsMayServe && !runsUnderKeyLocking(redis);
  if (wakeBy === "pop" || (wakeBy === "auto" && popsServe)) {
    return popsServe
      ? new Parking(ctx, redis, { lock: keys.lock, wake }, plan, runtime)
      : undefined;
  }
  // A subscription where pops do not serve (Upstash): polling once streams keep failing.
  if (!canSubscribe(redis) || !runtime.subscriptions.usable) return undefined;
  return new Listening(runtime, redis, keys, plan, keepsTurn);
}

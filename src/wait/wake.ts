/**
 * Push mode's choice, per acquisition, of how a hand-off reaches the waiter: a blocking pop
 * (parking.ts), a subscription (listening.ts), or neither (it polls). docs/push.md.
 */
import type { LockKeys } from "../locks/keys.js";
import type { LockRuntime } from "../locks/runtime.js";
import { runsUnderKeyLocking } from "../transport/key-locking.js";
import { canBlock, canSubscribe } from "../transport/redis-like.js";
import type { WaitPlan } from "./attempt.js";
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

/**
 * Undefined where the acquisition polls. `keepsTurn`: the kind serves its waiters in order (the
 * fair lock), so a subscribed waiter next in line parks within the claim window (Listening).
 */
export function parkingFor(
  runtime: LockRuntime,
  keys: WaitKeys,
  plan: WaitPlan,
  keepsTurn = false,
): Park | undefined {
  const { ctx } = runtime;
  const { redis } = ctx;
  const { mode, wakeBy } = plan.policy;
  if (!plan.mayWait || mode !== "push") return undefined;
  // No pop under Upstash's per-key locking (a hand-off there cannot name a waiter's list).
  // While that is a guess (a first script) it parks: a plain Redis refuses the flag before the
  // park, and pops that answer at once turn the next wait away from pops (BlockingPops).
  const { wake } = keys;
  const popsServe =
    wake !== undefined &&
    canBlock(redis) &&
    runtime.blockingPops.served &&
    !runsUnderKeyLocking(redis);
  if (wakeBy === "pop" || (wakeBy === "auto" && popsServe)) {
    return popsServe
      ? new Parking(ctx, redis, { lock: keys.lock, wake }, plan, runtime)
      : undefined;
  }
  // A subscription where pops do not serve (Upstash): polling once streams keep failing.
  if (!canSubscribe(redis) || !runtime.subscriptions.usable) return undefined;
  return new Listening(runtime, redis, keys, plan, keepsTurn);
}

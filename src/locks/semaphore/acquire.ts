/**
 * One attempt to take permits: a new hold (its own fencing token and lease) when the permits fit
 * beside what is held and what every waiter ahead in the FIFO queue asks for; else a place in
 * the queue and an answer that paces the next poll. Expired holds and dead waiters are pruned
 * first, so a crashed holder's permits and a crashed waiter's place come back by server time.
 */
import type { OperationContext } from "../../hold/context.js";
import { LUA_FRAGMENTS } from "../../hold/fragment.js";
import { SERVER_NOW_MS } from "../../hold/lua.js";
import { takeAnnouncedGrant } from "../../hold/queue/hand-off.js";
import { joinQueue, pruneDeadWaiters } from "../../hold/queue/lua.js";
import { defineScript, runScript, ttlOrNull } from "../../hold/script.js";
import { registerParkedPermits } from "./hand-off.js";
import type { SemaphoreKeys } from "./keys.js";
import { expireWithLastLease, loadHolds, SOONEST_LEASE_END } from "./lua.js";

/**
 * The fast path's one read (issue 42): EXISTS counts a key as often as it is named, so with the
 * holds named once and the operation record, the queue and the parked waiters twice each, an
 * odd count means some hold may be live (`holding`) and a count of at most 1 that nobody queues
 * or is parked and this request is no re-send (`quiet`). Neither (0): the permits are free, and
 * the hold this attempt takes is the only one, its lease the holds key's TTL, so it reads no
 * clock. A quiet attempt skips the replay, the announced grant, the dead waiters and the
 * reservations of those ahead; one with no hold skips reading the holds.
 */
const PRESENCE = `local present = redis.call('EXISTS', leasesKey, operationKey, operationKey, queueKey, queueKey,
  parkedKey, parkedKey)
local holding = present % 2 == 1
local quiet = present <= 1`;
/* @__PURE__ */ LUA_FRAGMENTS.push({
  name: "PRESENCE",
  lua: PRESENCE,
  needs: ["leasesKey", "operationKey", "queueKey", "parkedKey"],
  provides: ["holding", "quiet", "present"],
});

// KEYS: 1 capacity, 2 holds (SemaphoreKeys.leases), 3 fence, 4 queue, 5 timeouts, 6 operation
//       record, 7 pace hash (see SemaphoreKeys.pace), 8 parked waiters
// ARGV: 1 owner, 2 permits, 3 lease ms, 4 operation record ttl ms, 5 waiter timeout ms (0: a
//       single attempt, never queue; -1: the last attempt the poll budget allows, leave the
//       queue; both close the operation when busy), 6 the waiter's queue member
//       (`<owner> <operation id> <permits>`), 7 capacity to set when none is (-1: none),
//       8 push mode's claim window ms (0: the waiter polls), 9 the operation id, 10 the
//       waiter's channel (`sub<n>.<k>`, see registerParkedPermits; '': none)
// Reply: {1, fencing token} held; {-1} the operation is spent (its hold ended, or it was closed);
//        {0, ms until the soonest lease ends (-2: none), position (-1: not queued), available,
//        live waiters, permits still to come back before this waiter fits, ms between permits
//        coming back (the average hold / capacity; -1: unknown)} busy; {-3} no capacity set; {-4, capacity} asks more than the capacity.
// A waiter's demand is reserved ahead of everyone behind it: a later waiter for fewer permits
// takes only what is left after those ahead are served, so the head is never starved; one that
// asks more than the capacity (it shrank since it queued) reserves nothing, as it never fits.
// A re-send of an attempt that took permits re-arms that hold; nothing is taken twice. A single
// attempt, or the budget's last, ends the acquisition (its record `left`): a late copy of one of
// its attempts takes nothing. While waiters queue, every permit is busy: they come back about
// capacity / average hold per ms (not held / hold: fewer held now means the next comes sooner).
// Only a waiter that stays (timeout > 0) paces by the gap, so a single attempt does not read it.
// The queue is read once, whole: the reservations of those ahead and the live waiters (less
// this one if it left, plus it if it joined).
export const SEMAPHORE_ACQUIRE = defineScript({
  name: "semaphore.acquire",
  keys: [
    "capacityKey",
    "leasesKey",
    "fenceKey",
    "queueKey",
    "timeoutsKey",
    "operationKey",
    "paceKey",
    "parkedKey",
  ],
  args: [
    "owner",
    "permits",
    "leaseMs",
    "operationTtlMs",
    "waiterTimeoutMs",
    "waiter",
    "initialPermits",
    "claimMs",
    "parkId",
    "wakeBy",
  ],
  replies: { 1: [2], [-1]: [1], 0: [7], [-3]: [1], [-4]: [2] },
  lua: `${PRESENCE}
local capacity = redis.call('GET', capacityKey)
if not capacity and tonumber(initialPermits) >= 0 then
  redis.call('SET', capacityKey, initialPermits)
  capacity = initialPermits
end
local wanted = tonumber(permits)
if present == 0 and capacity and wanted <= tonumber(capacity) then
  local fence = redis.call('INCR', fenceKey)
  redis.call('HSET', leasesKey, owner .. ' ' .. fence, wanted)
  redis.call('PEXPIRE', leasesKey, leaseMs)
  redis.call('SET', operationKey, fence, 'PX', operationTtlMs)
  return {1, fence}
end
${SERVER_NOW_MS}
${loadHolds("leasesKey", true, "holding")}
local registered = false
if not quiet then
  ${takeAnnouncedGrant("parkedKey", "operationKey", "waiter", false)}
  local replay = announced or redis.call('GET', operationKey)
  if replay then
    local hold = owner .. ' ' .. replay
    local live = holds[hold]
    if not live then return {-1} end
    if live[3] < now + tonumber(leaseMs) then
      putHold(hold, live[1], live[2], now + tonumber(leaseMs))
      ${expireWithLastLease("leasesKey")}
    end
    return {1, tonumber(replay)}
  end
  ${pruneDeadWaiters("queueKey", "timeoutsKey")}
end
local function leave()
  if quiet then return end
  redis.call('ZREM', queueKey, waiter)
  redis.call('ZREM', timeoutsKey, waiter)
  if registered then redis.call('HDEL', parkedKey, waiter) end
end
if not capacity then
  leave()
  return {-3}
end
capacity = tonumber(capacity)
if wanted > capacity then
  leave()
  return {-4, capacity}
end
local reserved, queued, listed = 0, {}, false
if not quiet then
  queued = redis.call('ZRANGE', queueKey, 0, -1)
  for i = 1, #queued do
    if queued[i] == waiter then
      listed = true
      break
    end
    local asks = tonumber(string.match(queued[i], '(%d+)$'))
    if asks <= capacity then reserved = reserved + asks end
  end
end
if held + reserved + wanted <= capacity then
  leave()
  local fence = redis.call('INCR', fenceKey)
  putHold(owner .. ' ' .. fence, wanted, now, now + tonumber(leaseMs))
  ${expireWithLastLease("leasesKey")}
  redis.call('SET', operationKey, fence, 'PX', operationTtlMs)
  return {1, fence}
end
local position, queueLength = -1, nil
local timeout = tonumber(waiterTimeoutMs)
${SOONEST_LEASE_END}
if timeout > 0 then
  ${joinQueue("queueKey", "timeoutsKey")}
  ${registerParkedPermits()}
else
  leave()
  redis.call('SET', operationKey, 'left', 'PX', operationTtlMs)
end
local gap = -1
if timeout > 0 then
  local hold = tonumber(redis.call('HGET', paceKey, 'hold') or '-1')
  if hold > 0 and capacity > 0 then gap = hold / capacity end
end
local waiters = #queued
if listed then waiters = waiters - 1 end
if position >= 0 then waiters = waiters + 1 end
return {0, soonest, position, math.max(0, capacity - held), waiters,
  held + reserved + wanted - capacity, math.floor(gap + 0.5)}`,
});

/** How one attempt waits if the permits are not free. */
export interface PermitWaiter {
  /** Place lasts this long without a poll; 0: a single attempt; -1: the budget's last attempt. */
  readonly timeoutMs: number;
  /** Capacity to set when none is (`initialPermits`); undefined: none. */
  readonly initialPermits: number | undefined;
  /** Push mode, a waiter listening on a hand-off channel: its claim window; 0 or unset: it polls. */
  readonly claimMs?: number;
  /** With `claimMs`: `sub<n>.<k>`, its registering attempt n and channel shard k. */
  readonly wakeBy?: string;
}

export type PermitAttempt =
  | { readonly kind: "acquired"; readonly fencingToken: number }
  | { readonly kind: "spent" }
  | { readonly kind: "uninitialized" }
  | { readonly kind: "tooMany"; readonly capacity: number }
  | {
      readonly kind: "busy";
      /** Ms until the soonest lease ends (a permit surely returns by then); null: no hold. */
      readonly soonestLeaseEndMs: number | null;
      /** Place in the queue (0: head), -1 when not queued. */
      readonly position: number;
      readonly available: number;
      readonly waiters: number;
      /** Permits that must come back before this waiter fits (with those ahead served first). */
      readonly missing: number;
      /** About how many ms apart permits come back (average hold / capacity); null until learnt. */
      readonly permitGapMs: number | null;
    };

/** The queue member of acquisition `operationId` of `owner` for `permits`. */
export function waiterMember(owner: string, operationId: string, permits: number): string {
  return `${owner} ${operationId} ${permits}`;
}

export async function attemptPermits(
  ctx: OperationContext,
  keys: SemaphoreKeys,
  owner: string,
  permits: number,
  leaseMs: number,
  operationId: string,
  waiter: PermitWaiter,
): Promise<PermitAttempt> {
  const [status, value, position, available, waiters, missing, gap] = await runScript(
    ctx,
    SEMAPHORE_ACQUIRE,
    {
      capacityKey: keys.capacity,
      leasesKey: keys.leases,
      fenceKey: keys.fence,
      queueKey: keys.queue,
      timeoutsKey: keys.timeouts,
      operationKey: keys.operation(operationId),
      paceKey: keys.pace,
      parkedKey: keys.parked,
    },
    {
      owner,
      permits,
      leaseMs,
      operationTtlMs: ctx.operationTtlMs,
      waiterTimeoutMs: waiter.timeoutMs,
      waiter: waiterMember(owner, operationId, permits),
      initialPermits: waiter.initialPermits ?? -1,
      claimMs: waiter.claimMs ?? 0,
      parkId: operationId,
      wakeBy: waiter.wakeBy ?? "",
    },
  );
  switch (status) {
    case 1:
      return { kind: "acquired", fencingToken: value ?? 0 };
    case -1:
      return { kind: "spent" };
    case -3:
      return { kind: "uninitialized" };
    case -4:
      return { kind: "tooMany", capacity: value ?? 0 };
    default:
      return {
        kind: "busy",
        soonestLeaseEndMs: ttlOrNull(value),
        position: position ?? -1,
        available: available ?? 0,
        waiters: waiters ?? 0,
        missing: missing ?? 1,
        permitGapMs: gap === undefined || gap < 0 ? null : gap,
      };
  }
}

/**
 * Push hand-off for permits (`wait.mode: "push"`, over the semaphore's hand-off channels): when
 * permits come back (a release, a waiter leaving, a capacity raised), the same script grants them
 * to the parked waiters of the queue, first come first served, as many as the permits cover. A
 * granted waiter becomes a holder with its own fencing token and a lease of its claim window; the
 * grant is recorded in its parked registration and announced on its shard's channel, as a lock's
 * is (queue/hand-off.ts), and its next attempt replays it (takeAnnouncedGrant). Only a waiter
 * listening on a channel is granted: a polling waiter ahead keeps its permits reserved, as the
 * acquire script reserves them, so nobody behind it takes them first.
 */
import { LUA_FRAGMENTS } from "../fragment.js";
import {
  HAND_OFF_CHANNEL_KEYS,
  handOffChannelKeys,
  PARKED_REGISTRATION,
  pruneGrantRecords,
  publishOnShard,
  recordAnnouncedGrant,
} from "../queue/hand-off.js";
import { ownerOfWaiter, pruneDeadWaiters } from "../queue/lua.js";
import type { SemaphoreKeys } from "./keys.js";
import { expireWithLastLease, heldPermits } from "./lua.js";

/** The keys every script that may grant permits declares, in KEYS order after its own. */
export const PERMIT_HAND_OFF_KEYS = [
  "fenceKey",
  "queueKey",
  "timeoutsKey",
  "parkedKey",
  "grantsKey",
  ...HAND_OFF_CHANNEL_KEYS,
] as const;

/** The values of PERMIT_HAND_OFF_KEYS for semaphore `keys`. */
export function permitHandOffKeys(
  keys: SemaphoreKeys,
): Record<(typeof PERMIT_HAND_OFF_KEYS)[number], string | undefined> {
  return {
    fenceKey: keys.fence,
    queueKey: keys.queue,
    timeoutsKey: keys.timeouts,
    parkedKey: keys.parked,
    grantsKey: keys.grants,
    ...handOffChannelKeys(keys),
  };
}

/**
 * After permits came back: prunes dead waiters and expired grant records, then walks the queue
 * from its head while permits are left, granting each parked waiter whose permits fit beside the
 * holds and what the waiters ahead of it reserve (a polling waiter reserves its permits; so does
 * one that does not fit yet: FIFO, nobody is overtaken by a later waiter for fewer). Needs
 * `now`; expired leases must have been pruned.
 */
export function grantToParkedWaiters(): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "grantToParkedWaiters",
    lua: grantToParkedWaiters,
    needs: [
      "capacityKey",
      "leasesKey",
      "countsKey",
      ...PERMIT_HAND_OFF_KEYS,
      "now",
      "operationTtlMs",
    ],
  });
  return `${pruneDeadWaiters("queueKey", "timeoutsKey")}
${pruneGrantRecords("parkedKey", "grantsKey")}
do
  local capacity = tonumber(redis.call('GET', capacityKey) or '-1')
  ${heldPermits("countsKey")}
  local reserved, grants = 0, 0
  -- Every waiter asks at least one permit: past the first (capacity - held), none can fit.
  local candidates = {}
  if capacity > held then candidates = redis.call('ZRANGE', queueKey, 0, capacity - held - 1) end
  for _, member in ipairs(candidates) do
    if held + reserved >= capacity then break end
    local wanted = tonumber(string.match(member, ' (%d+)$'))
    local claim, lease, id, since, wakeBy, registration, shard =
      string.match(redis.call('HGET', parkedKey, member) or '', ${PARKED_REGISTRATION})
    if wakeBy == 'sub' and held + reserved + wanted <= capacity then
      lease = math.min(tonumber(claim), tonumber(lease))
      local fence = redis.call('INCR', fenceKey)
      local hold = ${ownerOfWaiter("member")} .. ' ' .. fence
      redis.call('ZADD', leasesKey, now + lease, hold)
      redis.call('HSET', countsKey, hold, wanted .. ' ' .. now)
      redis.call('ZREM', queueKey, member)
      redis.call('ZREM', timeoutsKey, member)
      ${recordAnnouncedGrant("parkedKey", "grantsKey", "member")}
      ${publishOnShard("shard", "id .. ' grant ' .. fence .. ' ' .. lease .. ' ' .. (now - tonumber(since)) .. ' ' .. registration")}
      held = held + wanted
      grants = grants + 1
    else
      reserved = reserved + wanted
    end
  end
  if grants > 0 then
    ${expireWithLastLease("leasesKey", "countsKey")}
  end
end`;
}

/**
 * Registers `waiter` as parked on channel shard `wakeBy` (`sub<n>.<k>`) when it listens (ARGV
 * `claimMs` > 0), with what a grant needs (see SemaphoreKeys.parked), or forgets it (a polling
 * waiter). Needs the locals `now` and `timeout` (its place's, which the registration outlives not).
 */
export function registerParkedPermits(): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "registerParkedPermits",
    lua: registerParkedPermits,
    needs: ["parkedKey", "claimMs", "leaseMs", "parkId", "wakeBy", "waiter", "now", "timeout"],
  });
  return `if tonumber(claimMs) > 0 and string.sub(wakeBy, 1, 3) == 'sub' then
  redis.call('HSET', parkedKey, waiter,
    claimMs .. ' ' .. leaseMs .. ' ' .. parkId .. ' ' .. now .. ' ' .. (now + timeout) .. ' ' .. wakeBy)
  if redis.call('PTTL', parkedKey) < timeout then redis.call('PEXPIRE', parkedKey, timeout) end
else
  redis.call('HDEL', parkedKey, waiter)
end`;
}

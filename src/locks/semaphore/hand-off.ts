/**
 * Push hand-off for permits (`wait.mode: "push"`, over the semaphore's hand-off channels): when
 * permits come back (a release, a waiter leaving, a capacity raised), the same script grants them
 * to the parked waiters of the queue, first come first served, as many as the permits cover. A
 * granted waiter becomes a holder with its own fencing token and a lease of its claim window; the
 * grant is recorded in its parked registration and announced on its shard's channel, as a lock's
 * is (queue/hand-off.ts), and its next attempt replays it (takeAnnouncedGrant). Only a waiter
 * listening on a channel is granted: a polling waiter ahead keeps its permits reserved, as the
 * acquire script reserves them, so nobody behind it takes them first. A waiter that asks more
 * than the capacity (it shrank) reserves nothing and is told to ask again, which fails it.
 *
 * A parked waiter's park is bounded by the grant it may get (permitParkBoundMs): a grant whose
 * word was lost still holds when the waiter asks again, and its attempt replays it, keeping its
 * turn. After a grant the next waiter that fits is told when the grant lapses if its park would
 * end later (`behind <lease>`, as a lock's hand-off tells it), so a grantee that died costs it
 * no more than the grant's lease.
 */
import { LUA_FRAGMENTS } from "../../hold/fragment.js";
import { lengthenTtl } from "../../hold/lua.js";
import {
  BEHIND_NOTICE_MS,
  GRANT_PARK_SHARE,
  grantKeepingParkMs,
  HAND_OFF_CHANNEL_KEYS,
  handOffChannelKeys,
  PARK_PAST_LEASE_MS,
  PARKED_REGISTRATION,
  publishOnShard,
  recordAnnouncedGrant,
  sweepParked,
} from "../../hold/queue/hand-off.js";
import { ownerOfWaiter } from "../../hold/queue/lua.js";
import type { SemaphoreKeys } from "./keys.js";
import { expireWithLastLease } from "./lua.js";

/** The keys every script that may grant permits declares, in KEYS order after its own. */
export const PERMIT_HAND_OFF_KEYS = [
  "fenceKey",
  "queueKey",
  "timeoutsKey",
  "parkedKey",
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
    ...handOffChannelKeys(keys),
  };
}

/**
 * Push mode: the longest park of a waiter for permits registered by a request sent with
 * `claimMs` and `leaseMs` whose busy answer said `soonestLeaseEndMs` (null: no hold) and
 * `position` (ms from that send). Within GRANT_PARK_SHARE of a grant's lease (grantKeepingParkMs); and, as a
 * lock's (parkBoundMs in src/wait/push/parking.ts), just past the soonest lease end, a claim window
 * more per waiter ahead: a permit that comes back by expiry is told to nobody. The acquire
 * script records the same bound (registerParkedPermits) to know whom a grant must tell.
 */
export function permitParkBoundMs(
  soonestLeaseEndMs: number | null,
  position: number,
  claimMs: number,
  leaseMs: number,
): number {
  const withinGrant = grantKeepingParkMs(claimMs, leaseMs);
  if (soonestLeaseEndMs === null) return withinGrant;
  return Math.min(
    withinGrant,
    soonestLeaseEndMs + Math.max(0, position) * claimMs + PARK_PAST_LEASE_MS,
  );
}

/** A Lua expression: the permits queue member `member` (a Lua expression) asks. */
function wantedBy(member: string): string {
  return `tonumber(string.match(${member}, ' (%d+)$'))`;
}

/**
 * Lua: tells the waiter of parked registration `parked` (a Lua string, may be '') to ask again:
 * `behind 0`, nothing ahead to wait for, ends its park now.
 */
function askAgain(parked: string): string {
  return `do
  local _, _, id, _, wakeBy, _, shard = string.match(${parked}, ${PARKED_REGISTRATION})
  if wakeBy == 'sub' then
    ${publishOnShard("shard", "id .. ' behind 0'")}
  end
end`;
}

/**
 * After permits came back: walks the queue from its head while permits are left, granting each
 * parked waiter whose permits fit beside the holds and what the waiters ahead of it reserve (a
 * polling waiter reserves its permits; so does one that does not fit yet: FIFO, nobody is
 * overtaken by a later waiter for fewer). A waiter
 * that asks more than the capacity (it shrank since it queued) can never fit: it reserves
 * nothing and is told to ask again (its attempt fails it). After a grant, the next waiter is told
 * when the grant lapses where its park would end later (noticeNextWaiter). Needs `now` and the
 * live holds (loadHolds, with `write`: expired ones pruned, a sole hold's entry written out).
 *
 * The queue is read from rank `from` in batches: every waiter that can fit asks at least one
 * permit, so past the next (capacity - held - reserved) of them none fits now; a waiter that
 * cannot fit takes no room, so another batch follows it. A grant takes the waiter out of the
 * queue, and the ranks after it move up (`from` one back). A dead waiter the walk meets (its park
 * over and its deadline passed) is pruned then, likewise: not the whole queue at every release
 * (issue 42; acquire attempts prune it all). The queue found empty, the parked hash is swept
 * (sweepParked).
 */
export function grantToParkedWaiters(): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "grantToParkedWaiters",
    lua: grantToParkedWaiters,
    needs: [
      "capacityKey",
      "leasesKey",
      ...PERMIT_HAND_OFF_KEYS,
      "now",
      "operationTtlMs",
      "holds",
      "held",
      "putHold",
    ],
  });
  return `do
  local capacity = tonumber(redis.call('GET', capacityKey) or '-1')
  local reserved, grants, shortest = 0, 0, nil
  local from = 0
  while held + reserved < capacity do
    local batch = redis.call('ZRANGE', queueKey, from, from + capacity - held - reserved - 1)
    if #batch == 0 then
      if from == 0 then
        ${sweepParked("parkedKey")}
      end
      break
    end
    from = from + #batch
    for _, member in ipairs(batch) do
      if held + reserved >= capacity then break end
      local wanted = ${wantedBy("member")}
      local parked = redis.call('HGET', parkedKey, member) or ''
      local claim, lease, id, since, wakeBy, registration, shard =
        string.match(parked, ${PARKED_REGISTRATION})
      local parkEnd = tonumber(string.match(parked, '^%d+ %d+ %S+ %d+ (%d+)') or '0')
      if parkEnd <= now and tonumber(redis.call('ZSCORE', timeoutsKey, member) or '0') <= now then
        redis.call('ZREM', queueKey, member)
        redis.call('ZREM', timeoutsKey, member)
        from = from - 1
      elseif wanted > capacity then
        ${askAgain("parked")}
      elseif wakeBy == 'sub' and held + reserved + wanted <= capacity then
        lease = math.min(tonumber(claim), tonumber(lease))
        local fence = redis.call('INCR', fenceKey)
        putHold(${ownerOfWaiter("member")} .. ' ' .. fence, wanted, now, now + lease)
        redis.call('ZREM', queueKey, member)
        redis.call('ZREM', timeoutsKey, member)
        from = from - 1
        ${recordAnnouncedGrant("parkedKey", "member")}
        ${publishOnShard("shard", "id .. ' grant ' .. fence .. ' ' .. lease .. ' ' .. (now - tonumber(since)) .. ' ' .. registration")}
        grants = grants + 1
        if not shortest or lease < shortest then shortest = lease end
      else
        reserved = reserved + wanted
      end
    end
  end
  if grants > 0 then
    ${expireWithLastLease("leasesKey")}
    ${noticeNextWaiter()}
  end
end`;
}

/**
 * After a walk that granted permits, the shortest of those grants' leases `shortest` (a local):
 * when the waiter now first in the queue that can fit is parked and its park would end more than
 * BEHIND_NOTICE_MS after that lease, publishes \`behind <lease>\` to it, as a lock's hand-off
 * tells the waiter behind (queue/hand-off.ts): if a grantee died, its grant lapses unclaimed and
 * this waiter asks then, instead of when its own park ends.
 */
function noticeNextWaiter(): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "noticeNextWaiter",
    lua: noticeNextWaiter,
    needs: ["queueKey", "parkedKey", ...HAND_OFF_CHANNEL_KEYS, "now", "capacity", "shortest"],
  });
  return `local rank = 0
while true do
  local first = redis.call('ZRANGE', queueKey, rank, rank)[1]
  if not first then break end
  if ${wantedBy("first")} <= capacity then
    local nextId, parkEnd, nextShard = string.match(redis.call('HGET', parkedKey, first) or '',
      '^%d+ %d+ (%S+) %d+ (%d+) sub%d+%.(%d+)$')
    if parkEnd and tonumber(parkEnd) > now + shortest + ${BEHIND_NOTICE_MS} then
      ${publishOnShard("nextShard", "nextId .. ' behind ' .. shortest")}
    end
    break
  end
  rank = rank + 1
end`;
}

/**
 * After the capacity went down: tells every parked waiter that now asks more than the capacity
 * to ask again, which fails it (SemaphoreCapacityError) at once instead of when its park ends.
 * Reads the whole queue: capacity changes are rare.
 */
export function tellWaitersThatCannotFit(): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "tellWaitersThatCannotFit",
    lua: tellWaitersThatCannotFit,
    needs: ["capacityKey", "queueKey", "parkedKey", ...HAND_OFF_CHANNEL_KEYS],
  });
  return `do
  local capacity = tonumber(redis.call('GET', capacityKey) or '-1')
  for _, member in ipairs(redis.call('ZRANGE', queueKey, 0, -1)) do
    if ${wantedBy("member")} > capacity then
      ${askAgain("redis.call('HGET', parkedKey, member) or ''")}
    end
  end
end`;
}

/**
 * Registers `waiter` as parked on channel shard `wakeBy` (`sub<n>.<k>`) when it listens (ARGV
 * `claimMs` > 0), with what a grant needs and when its park ends at the latest (see
 * SemaphoreKeys.parked and permitParkBoundMs, which this mirrors, capped by its place), or forgets
 * it (a polling waiter, where it was `registered`). Needs the locals `now`, `timeout` (its
 * place's, which the registration outlives not), `position` and `soonest` (ms until the soonest
 * lease ends, -2: no hold).
 */
export function registerParkedPermits(): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "registerParkedPermits",
    lua: registerParkedPermits,
    needs: [
      "parkedKey",
      "claimMs",
      "leaseMs",
      "parkId",
      "wakeBy",
      "waiter",
      "now",
      "timeout",
      "position",
      "soonest",
      "registered",
    ],
  });
  return `if tonumber(claimMs) > 0 and string.sub(wakeBy, 1, 3) == 'sub' then
  local claim = tonumber(claimMs)
  local parkFor = math.min(timeout, math.floor(${GRANT_PARK_SHARE} * math.min(claim, tonumber(leaseMs))))
  if soonest >= 0 then
    parkFor = math.min(parkFor, soonest + math.max(0, position) * claim + ${PARK_PAST_LEASE_MS})
  end
  redis.call('HSET', parkedKey, waiter,
    claimMs .. ' ' .. leaseMs .. ' ' .. parkId .. ' ' .. now .. ' ' .. (now + parkFor) .. ' ' .. wakeBy)
  ${lengthenTtl("parkedKey", "timeout", true)}
elseif registered then
  redis.call('HDEL', parkedKey, waiter)
end`;
}

/**
 * Lua fragments of the waiter queue (the plain, fair and write lock's). A place in the queue
 * belongs to one acquisition, not to its owner: its member is `waiter`, the owner and the
 * acquisition's operation id (see WAITER_LUA). Two tasks of one owner's scope that wait at once
 * hold a place each, and one leaving never takes the other's.
 */
import { LUA_FRAGMENTS } from "../fragment.js";
import { lengthenTtl } from "../lua.js";

/**
 * Declares `waiter`, the queue member of this acquisition: the owner and `parkId` (absent where
 * the caller never queues, as RedLock's three-key attempt).
 */
export const WAITER_LUA = "local waiter = owner .. ' ' .. (parkId or '')";
/* @__PURE__ */ LUA_FRAGMENTS.push({
  name: "WAITER_LUA",
  lua: WAITER_LUA,
  needs: ["owner", "parkId"],
  provides: ["waiter"],
});

/** A Lua expression: the owner of queue member `member` (a Lua expression). */
export function ownerOfWaiter(member: string): string {
  return `string.match(${member}, '^(%S+)')`;
}

/**
 * Drops waiters whose deadline has passed (they stopped polling: crashed, or lost) from the
 * sorted sets `queueKey` and `timeoutsKey`.
 */
export function pruneDeadWaiters(queueKey: string, timeoutsKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "pruneDeadWaiters",
    lua: () => pruneDeadWaiters(queueKey, timeoutsKey),
    needs: [queueKey, timeoutsKey, "now"],
  });
  return `local dead = redis.call('ZRANGEBYSCORE', ${timeoutsKey}, '-inf', now)
for i = 1, #dead do
  redis.call('ZREM', ${queueKey}, dead[i])
  redis.call('ZREM', ${timeoutsKey}, dead[i])
end`;
}

/**
 * Registers (or refreshes) `waiter` in `timeoutsKey` with the deadline `now + timeout` and keeps
 * the key alive at least `timeout` ms (a local of the caller's).
 */
export function refreshWaiter(timeoutsKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "refreshWaiter",
    lua: () => refreshWaiter(timeoutsKey),
    needs: [timeoutsKey, "now", "waiter", "timeout"],
  });
  return `redis.call('ZADD', ${timeoutsKey}, now + timeout, waiter)
${lengthenTtl(timeoutsKey, "timeout")}`;
}

/** How joinQueue finds and makes a waiter's place (Lua expressions where not said otherwise). */
export interface JoinQueueOptions {
  /** Runs (Lua) when the waiter joins an empty queue. */
  readonly whenFirst?: string;
  /**
   * True where the waiter has most likely no place yet (a parking waiter not registered: its
   * first attempt): it joins by ZADD NX without a ZRANK first, and pays the ZRANK only if it was in
   * place after all (a copy of the attempt ran before).
   */
  readonly likelyNew?: string;
}

/**
 * Gives `waiter` a ticket in `queueKey` unless it has one (a re-sent or repeated attempt keeps
 * its place), keeps its place alive `timeout` ms, and sets `position` to the number of waiters
 * ahead of it (`timeout`, `position` and `queueLength` are locals of the caller's). A waiter in
 * place pays one ZRANK; one joining gets the last rank, its ticket being the highest, and sets
 * `queueLength` to the queue's length, which a busy reply then need not count again
 * (busyTurnReply). See JoinQueueOptions.
 */
export function joinQueue(
  queueKey: string,
  timeoutsKey: string,
  options: JoinQueueOptions = {},
): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "joinQueue",
    lua: () => joinQueue(queueKey, timeoutsKey, options),
    needs: [queueKey, "now", "waiter", "timeout", "position", "queueLength"],
  });
  const { whenFirst = "", likelyNew } = options;
  const first = whenFirst === "" ? "" : `\n  if not tail[1] then\n${whenFirst}\n  end`;
  const rank = `redis.call('ZRANK', ${queueKey}, waiter)`;
  const inPlace =
    likelyNew === undefined
      ? `position = ${rank}`
      : `position = not (${likelyNew}) and ${rank} or nil`;
  return `${inPlace}
if not position then
  local ticket = now
  local tail = redis.call('ZRANGE', ${queueKey}, -1, -1, 'WITHSCORES')${first}
  if tail[2] and tonumber(tail[2]) >= ticket then ticket = tonumber(tail[2]) + 1 end
  if redis.call('ZADD', ${queueKey}, 'NX', ticket, waiter) == 1 then
    queueLength = redis.call('ZCARD', ${queueKey})
    position = queueLength - 1
  else position = ${rank} end
end
${lengthenTtl(queueKey, "timeout")}
${refreshWaiter(timeoutsKey)}`;
}

/** Shortest and longest reservation of a free lock for the next waiters, and the one used
 * before any waiter's round trip is known (ms). */
export const RESERVATION_MS = { min: 10, max: 500, unknown: 50 } as const;

/**
 * After a release frees the lock: reserves it for the two live waiters at the head of the queue,
 * if any, for about a round trip of theirs (the `rtt` average of the pace hash, as learnHold read
 * it into `pace`), so that nobody else barges into the gap between the release and their polls.
 * Two, because both aim at this release (see src/wait/poll.ts): one a little early, one a little
 * late. The two are the local `heads`, read once dead waiters were pruned (handOffFreedLock).
 * Written with the release's other pace fields (`paceWrite`, see writePace in pace.ts).
 */
export function reserveForHead(): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "reserveForHead",
    lua: () => reserveForHead(),
    needs: ["heads", "now", "pace", "paceWrite"],
  });
  return `if heads[1] then
  local rtt = tonumber(pace[5] or '0')
  local window = ${RESERVATION_MS.unknown}
  if rtt > 0 then window = math.floor(math.min(${RESERVATION_MS.max}, math.max(${RESERVATION_MS.min}, rtt))) end
  paceWrite('for', heads[1], 'for2', heads[2] or heads[1], 'until', now + window)
end`;
}

/**
 * A Lua expression: true when a release reserved the free lock for other acquisitions, at least
 * one of which still waits in `queueKey`, and the reservation has not lapsed.
 */
export function reservedForAnother(statsKey: string, queueKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "reservedForAnother",
    lua: () => reservedForAnother(statsKey, queueKey),
    needs: [statsKey, queueKey, "now", "waiter"],
  });
  return `(function()
  local reserved = redis.call('HMGET', ${statsKey}, 'for', 'for2', 'until')
  if not reserved[1] or reserved[1] == waiter or reserved[2] == waiter then return false end
  if tonumber(reserved[3]) <= now then return false end
  return redis.call('ZSCORE', ${queueKey}, reserved[1]) ~= false
    or redis.call('ZSCORE', ${queueKey}, reserved[2]) ~= false
end)()`;
}

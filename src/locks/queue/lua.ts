/** Lua fragments of the fair lock's waiter queue (also used by the read-write lock's writers). */

/**
 * Drops waiters whose deadline has passed (they stopped polling: crashed, or lost) from the
 * sorted sets `queueKey` and `timeoutsKey`. Needs `now`.
 */
export function pruneDeadWaiters(queueKey: string, timeoutsKey: string): string {
  return `local dead = redis.call('ZRANGEBYSCORE', ${timeoutsKey}, '-inf', now)
for i = 1, #dead do
  redis.call('ZREM', ${queueKey}, dead[i])
  redis.call('ZREM', ${timeoutsKey}, dead[i])
end`;
}

/**
 * Registers (or refreshes) waiter `owner` in `timeoutsKey` with the deadline `now + timeout`
 * and keeps the key alive at least `timeout` ms. Needs `now` and a local `timeout`.
 */
export function refreshWaiter(timeoutsKey: string): string {
  return `redis.call('ZADD', ${timeoutsKey}, now + timeout, owner)
if redis.call('PTTL', ${timeoutsKey}) < timeout then redis.call('PEXPIRE', ${timeoutsKey}, timeout) end`;
}

/**
 * Gives waiter `owner` a ticket in `queueKey` unless it has one (a re-sent or repeated attempt
 * keeps its place), keeps its place alive `timeout` ms, and sets `position` to the number of
 * waiters ahead of it. Needs `now`, `owner`, a local `timeout` and a local `position`.
 */
export function joinQueue(queueKey: string, timeoutsKey: string): string {
  return `if not redis.call('ZSCORE', ${queueKey}, owner) then
  local ticket = now
  local tail = redis.call('ZRANGE', ${queueKey}, -1, -1, 'WITHSCORES')
  if tail[2] and tonumber(tail[2]) >= ticket then ticket = tonumber(tail[2]) + 1 end
  redis.call('ZADD', ${queueKey}, ticket, owner)
end
if redis.call('PTTL', ${queueKey}) < timeout then redis.call('PEXPIRE', ${queueKey}, timeout) end
${refreshWaiter(timeoutsKey)}
position = redis.call('ZRANK', ${queueKey}, owner)`;
}

/** Shortest and longest reservation of a free lock for the head waiter, and the one used before
 * any waiter's round trip is known (ms). */
export const RESERVATION_MS = { min: 10, max: 500, unknown: 50 } as const;

/**
 * After a release frees the lock: reserves it for the live head waiter, if any, for about two of
 * the waiters' round trips (the `rtt` average in `statsKey`), so that nobody barges into the gap
 * between the release and the head's poll. Needs `now` and `paceTtlMs`.
 */
export function reserveForHead(statsKey: string, queueKey: string, timeoutsKey: string): string {
  return `${pruneDeadWaiters(queueKey, timeoutsKey)}
local head = redis.call('ZRANGE', ${queueKey}, 0, 0)[1]
if head then
  local rtt = tonumber(redis.call('HGET', ${statsKey}, 'rtt') or '0')
  local window = ${RESERVATION_MS.unknown}
  if rtt > 0 then window = math.min(${RESERVATION_MS.max}, math.max(${RESERVATION_MS.min}, 2 * rtt)) end
  redis.call('HSET', ${statsKey}, 'for', head, 'until', now + window)
  redis.call('PEXPIRE', ${statsKey}, paceTtlMs)
end`;
}

/**
 * A Lua expression: true when a release reserved the free lock for another owner that is still
 * waiting in `queueKey`, and the reservation has not lapsed. Needs `now` and `owner`.
 */
export function reservedForAnother(statsKey: string, queueKey: string): string {
  return `(function()
  local reservation = redis.call('HMGET', ${statsKey}, 'for', 'until')
  return reservation[1] ~= false and reservation[1] ~= owner
    and tonumber(reservation[2]) > now
    and redis.call('ZSCORE', ${queueKey}, reservation[1]) ~= false
end)()`;
}

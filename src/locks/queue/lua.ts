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

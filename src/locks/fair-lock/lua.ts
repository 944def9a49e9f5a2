/** Lua fragments shared by the scripts of the fair lock and the read-write lock. */

/**
 * Defines `now`, the server's clock in whole milliseconds. Clients' clocks are never trusted:
 * waiter deadlines and hold expiries are compared against this only. Integer arithmetic on both
 * Lua 5.1 (doubles, exact below 2^53) and Lua 5.4.
 */
export const SERVER_NOW_MS = `local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)`;

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
 * Registers (or refreshes) waiter ARGV[1] in `timeoutsKey` with the deadline `now + timeout`
 * and keeps the key alive at least `timeout` ms. Needs `now` and a local `timeout`.
 */
export function refreshWaiter(timeoutsKey: string): string {
  return `redis.call('ZADD', ${timeoutsKey}, now + timeout, ARGV[1])
if redis.call('PTTL', ${timeoutsKey}) < timeout then redis.call('PEXPIRE', ${timeoutsKey}, timeout) end`;
}

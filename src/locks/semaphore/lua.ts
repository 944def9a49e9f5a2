/** Lua fragments of the semaphore's scripts (need `now`, from SERVER_NOW_MS). */

/**
 * Drops holds whose lease has passed from `leasesKey` and their permit counts from `countsKey`:
 * a crashed holder's permits return when its own lease ends, and nothing expired lingers.
 */
export function pruneExpiredLeases(leasesKey: string, countsKey: string): string {
  return `local expired = redis.call('ZRANGEBYSCORE', ${leasesKey}, '-inf', now)
for i = 1, #expired do
  redis.call('ZREM', ${leasesKey}, expired[i])
  redis.call('HDEL', ${countsKey}, expired[i])
end`;
}

/**
 * A Lua expression: the permits of a hold's entry in the counts hash (`<permits> <server ms of
 * the grant>`; `entry` a Lua expression, a string).
 */
export function permitsOf(entry: string): string {
  return `tonumber(string.match(${entry}, '^%d+'))`;
}

/** Declares `held`: the permits of every live hold in `countsKey` (prune expired ones first). */
export function heldPermits(countsKey: string): string {
  return `local held = 0
for _, entry in ipairs(redis.call('HVALS', ${countsKey})) do held = held + ${permitsOf("entry")} end`;
}

/**
 * Sets the TTL of `leasesKey` and `countsKey` to the latest lease, so both vanish together once
 * the last hold has surely ended.
 */
export function expireWithLastLease(leasesKey: string, countsKey: string): string {
  return `local last = redis.call('ZRANGE', ${leasesKey}, -1, -1, 'WITHSCORES')
if last[2] then
  local ttl = math.max(1, tonumber(last[2]) - now)
  redis.call('PEXPIRE', ${leasesKey}, ttl)
  redis.call('PEXPIRE', ${countsKey}, ttl)
end`;
}

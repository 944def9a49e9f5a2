/** Lua fragments of the read-write lock's scripts. */
import { LUA_FRAGMENTS } from "../../hold/fragment.js";

/**
 * Drops read holds whose expiry has passed from `readsKey` and counts them off their owner in
 * `readersKey`: a crashed reader stops blocking writers when its own lease ends. A hold is
 * `<owner> <hold id>`; owners contain no spaces.
 */
export function pruneExpiredReads(readsKey: string, readersKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "pruneExpiredReads",
    lua: () => pruneExpiredReads(readsKey, readersKey),
    needs: [readsKey, readersKey, "now"],
  });
  return `local expired = redis.call('ZRANGEBYSCORE', ${readsKey}, '-inf', now)
for i = 1, #expired do
  local reader = string.sub(expired[i], 1, string.find(expired[i], ' ', 1, true) - 1)
  redis.call('ZREM', ${readsKey}, expired[i])
  if redis.call('HINCRBY', ${readersKey}, reader, -1) <= 0 then
    redis.call('HDEL', ${readersKey}, reader)
  end
end`;
}

/**
 * Sets the TTL of `readsKey` and `readersKey` to the latest expiry of a read hold, so that both
 * vanish together when the last hold has surely ended.
 */
export function expireReadsWithLastHold(readsKey: string, readersKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "expireReadsWithLastHold",
    lua: () => expireReadsWithLastHold(readsKey, readersKey),
    needs: [readsKey, readersKey, "now"],
  });
  return `local last = redis.call('ZRANGE', ${readsKey}, -1, -1, 'WITHSCORES')
if last[2] then
  local ttl = math.max(1, tonumber(last[2]) - now)
  redis.call('PEXPIRE', ${readsKey}, ttl)
  redis.call('PEXPIRE', ${readersKey}, ttl)
end`;
}

/**
 * Lua fragments of the read-write lock's scripts. The read side is one sorted set, `readsKey`:
 * each read hold `<owner> <hold id>` scored by its expiry (server ms); owners contain no spaces.
 * An owner's number of read holds is counted from it where a script needs it (ownerReadHolds),
 * not kept in step in a second key: every write of that key was a billed command on the common
 * path (issue 42).
 */
import { LUA_FRAGMENTS } from "../../hold/fragment.js";

/** Drops read holds whose expiry has passed: a crashed reader stops blocking writers then. */
export function pruneExpiredReads(readsKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "pruneExpiredReads",
    lua: () => pruneExpiredReads(readsKey),
    needs: [readsKey, "now"],
  });
  return `redis.call('ZREMRANGEBYSCORE', ${readsKey}, '-inf', now)`;
}

/**
 * Sets the TTL of `readsKey` to the latest expiry of a read hold, so that it vanishes when the
 * last hold has surely ended.
 */
export function expireReadsWithLastHold(readsKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "expireReadsWithLastHold",
    lua: () => expireReadsWithLastHold(readsKey),
    needs: [readsKey, "now"],
  });
  return `local last = redis.call('ZRANGE', ${readsKey}, -1, -1, 'WITHSCORES')
if last[2] then redis.call('PEXPIRE', ${readsKey}, math.max(1, tonumber(last[2]) - now)) end`;
}

/**
 * Defines `ownerReads`: how many read holds `owner` has in `readsKey` (`liveOnly`: those whose
 * expiry is after `now`; else every hold, as after pruning). One read of the set, whose holds
 * are few.
 */
export function ownerReadHolds(readsKey: string, owner: string, liveOnly = false): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "ownerReadHolds",
    lua: () => ownerReadHolds(readsKey, owner, liveOnly),
    needs: [readsKey, owner, liveOnly ? "now" : undefined],
    provides: ["ownerReads"],
  });
  const from = liveOnly ? "'(' .. now" : "'-inf'";
  return `local ownerReads = 0
for _, each in ipairs(redis.call('ZRANGEBYSCORE', ${readsKey}, ${from}, '+inf')) do
  if string.sub(each, 1, #${owner} + 1) == ${owner} .. ' ' then ownerReads = ownerReads + 1 end
end`;
}

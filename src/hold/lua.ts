/** Lua fragments shared by the scripts of several primitives. */
import { LUA_FRAGMENTS } from "./fragment.js";

/**
 * Defines `now`, the server's clock in whole milliseconds. Clients' clocks are never trusted:
 * waiter deadlines and hold expiries are compared against this only. Integer arithmetic on both
 * Lua 5.1 (doubles, exact below 2^53) and Lua 5.4.
 */
export const SERVER_NOW_MS = `local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)`;
/* @__PURE__ */ LUA_FRAGMENTS.push({
  name: "SERVER_NOW_MS",
  lua: SERVER_NOW_MS,
  provides: ["now"],
});

/**
 * Lua: lengthens `key`'s TTL to `ms` (a Lua expression) where it is shorter, and gives a key
 * without one that TTL; never shortens it: `if PTTL < ms then PEXPIRE`. Written as `PEXPIRE … GT`
 * (Redis 7, Upstash), then `NX` where that set nothing (GT treats a key without a TTL as
 * infinite): one billed command where the TTL was shorter, as it is once time has passed since
 * it was set, two otherwise. With `usuallyLonger` (a key that another write keeps longer, such as
 * the parked hash that grant records keep `operationTtlMs`), the read comes first: one command.
 */
export function lengthenTtl(key: string, ms: string, usuallyLonger = false): string {
  return usuallyLonger
    ? `if redis.call('PTTL', ${key}) < ${ms} then redis.call('PEXPIRE', ${key}, ${ms}) end`
    : `if redis.call('PEXPIRE', ${key}, ${ms}, 'GT') == 0 then redis.call('PEXPIRE', ${key}, ${ms}, 'NX') end`;
}

/**
 * Lua: lengthenTtl for a key that has a TTL (a lock's), leaving its PTTL after in `pttlName`, a
 * local that holds `ms` as a number: read only where the lengthening did not set it (a key
 * without a TTL still gets one).
 */
export function lengthenTtlInto(key: string, ms: string, pttlName: string): string {
  return `if redis.call('PEXPIRE', ${key}, ${ms}, 'GT') == 0 then
  ${pttlName} = redis.call('PTTL', ${key})
  if ${pttlName} == -1 then
    redis.call('PEXPIRE', ${key}, ${ms})
    ${pttlName} = tonumber(${ms})
  end
end`;
}

/**
 * The first lines of an exclusive acquire script (`lockKey` is the hash of owner → holds). If
 * operation record `operationKey` exists, this request is a re-send of an attempt that acquired (or
 * was handed the lock): answer {1, fence, holds, pttl} again while the hold it recorded is still
 * the owner's, or {-1} when that hold is gone since — also when the owner holds the lock again by a
 * later hold (another task of its scope took it fresh: a new token), which the replay must not
 * attach to. Nothing is applied twice. With `rearmTo` (the name of a lease in ms), a replay also
 * re-arms the lease: for scripts whose attempts share one id. With `refusedRecord`, a record of
 * that value is a refusal (the write lock's upgrade), answered {-2} again. `announced` (declared
 * by takeAnnouncedGrant, which runs first): a grant's token just written into the record, which
 * then need not be read back.
 */
export function replayAcquisition(
  operationKey: string,
  rearmTo?: string,
  refusedRecord?: string,
): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "replayAcquisition",
    lua: () => replayAcquisition(operationKey, rearmTo, refusedRecord),
    needs: ["lockKey", "owner", "fenceKey", operationKey, rearmTo, "announced"],
  });
  const refused =
    refusedRecord === undefined
      ? ""
      : `
  if replay == '${refusedRecord}' then return {-2} end`;
  // A later attempt sharing the id: its lease counts from its own send, so the lease is re-armed
  // to at least `rearmTo` ms (only ever lengthened).
  const answer =
    rearmTo === undefined
      ? "return {1, tonumber(replay), tonumber(held), redis.call('PTTL', lockKey)}"
      : `local pttl = tonumber(${rearmTo})
${lengthenTtlInto("lockKey", rearmTo, "pttl")}
return {1, tonumber(replay), tonumber(held), pttl}`;
  return `local replay = announced or redis.call('GET', ${operationKey})
if replay then${refused}
  local held = redis.call('HGET', lockKey, owner)
  if held and ${fenceStillAt("fenceKey", "tonumber(replay)")} then
    ${answer.replaceAll("\n", "\n    ")}
  end
  return {-1}
end`;
}

/**
 * A Lua expression: true while the fence counter `fenceKey` still shows `token` (both Lua
 * expressions), i.e. the hold that was given `token` is the lock's latest first hold. A later
 * first hold (the same owner's too, after that hold ended by its lease or a force-release)
 * moved the counter on; re-entries share their hold's token.
 */
export function fenceStillAt(fenceKey: string, token: string): string {
  return `tonumber(redis.call('GET', ${fenceKey}) or '0') == ${token}`;
}

/**
 * Returns {0} ("holds nothing") when the owner's hold in `lockKey` is not the hold the caller
 * means: `heldToken` (a name; "0": no hold named, skip) is the fencing token the hold was given
 * (see fenceStillAt; `fenceKey` is a name). So a handle whose hold ended never releases or
 * extends a later hold of the same owner.
 */
export function refuseLaterHold(fenceKey: string, heldToken: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "refuseLaterHold",
    lua: () => refuseLaterHold(fenceKey, heldToken),
    needs: [fenceKey, heldToken],
  });
  return `if tonumber(${heldToken}) > 0 and not (${fenceStillAt(fenceKey, `tonumber(${heldToken})`)}) then
  return {0}
end`;
}

/**
 * The whole of an exclusive release script (`fencingToken`: see refuseLaterHold): drop one hold,
 * delete the owner's field at zero, record the result under `operationKey` and answer {1, holds
 * left, others waiting (1/0)}, or {0} when the owner holds nothing (then no record stays). A
 * re-send replays the recorded answer as {1, holds left}. When the last hold goes, `whenFreed`
 * runs if `freedSlowly` (a Lua expression that may read `fence`, the fence counter as a string,
 * and what `readFirst` read) holds: e.g. to learn how long the hold lasted and hand the lock
 * over; it may set `othersWaiting` to 1. `readFirst` (Lua, run once the last hold went) reads
 * what both need in one command. `whenClaimed` runs once the record is claimed, before the hold
 * is looked for. Else the release costs 5 commands: the record is claimed first (SET NX, which is
 * also the replay check) and holds the answer of a last hold's release, 0.
 */
export function releaseOneHold(
  operationKey: string,
  whenFreed: string,
  freedSlowly: string,
  readFirst = "",
  whenClaimed = "",
): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "releaseOneHold",
    lua: () => releaseOneHold(operationKey, whenFreed, freedSlowly, readFirst, whenClaimed),
    needs: [operationKey, "lockKey", "owner", "operationTtlMs", "fenceKey", "fencingToken"],
  });
  return `if not redis.call('SET', ${operationKey}, 0, 'NX', 'PX', operationTtlMs) then
  return {1, tonumber(redis.call('GET', ${operationKey}))}
end
${whenClaimed}
local holds = tonumber(redis.call('HGET', lockKey, owner))
local fence = holds and redis.call('GET', fenceKey) or '0'
if not holds or (tonumber(fencingToken) > 0 and tonumber(fence) ~= tonumber(fencingToken)) then
  redis.call('DEL', ${operationKey})
  return {0}
end
local left = holds - 1
local othersWaiting = 0
if left > 0 then
  redis.call('HINCRBY', lockKey, owner, -1)
  redis.call('SET', ${operationKey}, left, 'PX', operationTtlMs)
else
  redis.call('HDEL', lockKey, owner)
  left = 0
  ${readFirst}
  if ${freedSlowly} then
${whenFreed}
  end
end
return {1, left, othersWaiting}`;
}

/**
 * The end of an exclusive acquire script once `count` holds this owner's hold count (1: a first
 * hold, on a key this script made). A first hold draws the next fencing token and runs
 * `onFirstHold`; a re-entry keeps the current token. The lease only lengthens (holds of one owner
 * share the key). The result is
 * recorded under `operationKey` for re-sends, and the answer is {1, fence, holds, pttl}.
 */
export function grantExclusiveHold(onFirstHold = ""): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "grantExclusiveHold",
    lua: () => grantExclusiveHold(onFirstHold),
    needs: ["count", "fenceKey", "lockKey", "leaseMs", "operationKey", "operationTtlMs"],
  });
  // A first hold made the key (every acquire script takes one only where the key was absent):
  // its lease is leaseMs. A re-entry's lease only lengthens.
  return `local fence
local pttl = tonumber(leaseMs)
if count == 1 then
  fence = redis.call('INCR', fenceKey)
  ${onFirstHold}
  redis.call('PEXPIRE', lockKey, leaseMs)
else
  fence = tonumber(redis.call('GET', fenceKey) or '0')
  ${lengthenTtlInto("lockKey", "leaseMs", "pttl").replaceAll("\n", "\n  ")}
end
redis.call('SET', operationKey, fence, 'PX', operationTtlMs)
return {1, fence, count, pttl}`;
}

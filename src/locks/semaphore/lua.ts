/**
 * Lua fragments over a semaphore's holds, one hash (SemaphoreKeys.leases): hold → `<permits>
 * <server ms of the grant, or - when unknown> <server ms its lease ends>`, or `<permits>` alone
 * for the sole hold the fast path took, whose lease is the key's TTL (it reads no clock). The
 * key always outlives its holds; a fragment that adds a hold beside others writes a sole hold's
 * entry out in full first (loadHolds), so a short entry is always the only one.
 */
import { LUA_FRAGMENTS } from "../../hold/fragment.js";

/** A hold's entry taken apart: permits, grant ('-': unknown; '': a sole hold), lease end. */
export const HOLD_ENTRY = `'^(%d+) ?(%S*) ?(%d*)$'`;

/**
 * Declares `holds` (live hold → {permits, grant or '-', lease end}) and `held` (their permits)
 * from `leasesKey`, reading it only where `guard` (a Lua expression) holds. A sole hold's lease
 * end is the key's, from its TTL. With `write`, holds whose lease has passed are dropped (a
 * crashed holder's permits come back by server time), a sole hold's entry is written out in full
 * so that holds may join it, and the functions `putHold(hold, permits, grant, lease end)` and
 * `dropHold(hold)` keep the hash, `holds` and `held` in step. Needs `now`.
 */
export function loadHolds(leasesKey: string, write: boolean, guard = "true"): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "loadHolds",
    lua: () => loadHolds(leasesKey, write, guard),
    needs: [leasesKey, "now"],
    provides: write ? ["holds", "held", "putHold", "dropHold"] : ["holds", "held"],
  });
  const writing = write
    ? `
local function putHold(hold, permits, since, expiry)
  if holds[hold] then held = held - holds[hold][1] end
  holds[hold] = {permits, since, expiry}
  held = held + permits
  redis.call('HSET', ${leasesKey}, hold, permits .. ' ' .. since .. ' ' .. expiry)
end
local function dropHold(hold)
  if holds[hold] then
    held = held - holds[hold][1]
    holds[hold] = nil
    redis.call('HDEL', ${leasesKey}, hold)
  end
end`
    : "";
  return `local holds, held = {}, 0
if ${guard} then
  local entries, ended = redis.call('HGETALL', ${leasesKey}), {}
  for i = 1, #entries, 2 do
    local permits, since, expiry = string.match(entries[i + 1], ${HOLD_ENTRY})
    permits = tonumber(permits)
    if since == '' then
      since, expiry = '-', now + redis.call('PTTL', ${leasesKey})${
        write
          ? `
      redis.call('HSET', ${leasesKey}, entries[i], permits .. ' - ' .. expiry)`
          : ""
      }
    else
      expiry = tonumber(expiry)
    end
    if expiry > now then
      holds[entries[i]] = {permits, since, expiry}
      held = held + permits
    else
      ended[#ended + 1] = entries[i]
    end
  end${
    write
      ? `
  if #ended > 0 then redis.call('HDEL', ${leasesKey}, unpack(ended)) end`
      : ""
  }
end${writing}`;
}

/**
 * Declares `soonest`: ms until the soonest lease of `holds` ends (-2: no hold), for a busy
 * answer (a permit surely comes back by then).
 */
export const SOONEST_LEASE_END = `local soonest = -2
for _, hold in pairs(holds) do
  if soonest < 0 or hold[3] - now < soonest then soonest = math.max(0, hold[3] - now) end
end`;
/* @__PURE__ */ LUA_FRAGMENTS.push({
  name: "SOONEST_LEASE_END",
  lua: SOONEST_LEASE_END,
  needs: ["holds", "now"],
  provides: ["soonest"],
});

/** Lua: sets the TTL of `leasesKey` to the latest lease of `holds`, so it ends with them. */
export function expireWithLastLease(leasesKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "expireWithLastLease",
    lua: () => expireWithLastLease(leasesKey),
    needs: [leasesKey, "holds", "now"],
  });
  return `do
  local latest = nil
  for _, hold in pairs(holds) do
    if not latest or hold[3] > latest then latest = hold[3] end
  end
  if latest then redis.call('PEXPIRE', ${leasesKey}, math.max(1, latest - now)) end
end`;
}

/**
 * Re-arms one hold's lease to `leaseMs` from now (server time): `extend()` and the watchdog. A
 * hold whose lease has already passed is pruned and reported gone, never re-created: a renewal
 * that arrives after the permits returned must not take them again behind the back of whoever
 * got them since (redis-semaphore#175). Setting the same expiry twice is harmless, so a re-send
 * needs no operation id.
 */
import type { OperationContext } from "../../hold/context.js";
import { lengthenTtl, SERVER_NOW_MS } from "../../hold/lua.js";
import { defineScript, runScript, YES_OR_NO } from "../../hold/script.js";
import type { SemaphoreKeys } from "./keys.js";
import { HOLD_ENTRY } from "./lua.js";

// KEYS: 1 holds (SemaphoreKeys.leases). ARGV: 1 the hold (`<owner> <fencing token>`), 2 lease
//       ms, 3 the claim window a push hand-off granted (0: none), 4 the hold's lease counted from
//       that grant. While the hold's lease is still within the claim window (nothing re-armed it
//       since the grant), it grows by (4 - 3), so the hold ends exactly that lease after the
//       grant however late this request arrives (as lock.extend does); else 2 from now. A claim
//       never shortens: an extend or a replay re-armed the lease since the grant, and its sender
//       trusts that (an extend's answer may come after the claim's).
// Reply: {1} re-armed; {0} the hold is gone (released, expired or force-released).
// The sole hold the fast path took (its entry only its permits) is live while the key is, and its
// lease is the key's TTL: re-armed without the clock (with a claim, from its TTL; it is no grant). The key outlives every
// hold: it is lengthened where this lease now ends later.
export const SEMAPHORE_EXTEND = defineScript({
  name: "semaphore.extend",
  keys: ["leasesKey"],
  args: ["hold", "leaseMs", "claimMs", "grantLeaseMs"],
  replies: YES_OR_NO,
  lua: `local entry = redis.call('HGET', leasesKey, hold)
if not entry then return {0} end
local permits, since, expiry = string.match(entry, ${HOLD_ENTRY})
if since == '' and tonumber(claimMs) == 0 then
  redis.call('PEXPIRE', leasesKey, leaseMs)
  return {1}
end
${SERVER_NOW_MS}
if since == '' then
  since, expiry = '-', now + redis.call('PTTL', leasesKey)
else
  expiry = tonumber(expiry)
end
if expiry <= now then
  redis.call('HDEL', leasesKey, hold)
  return {0}
end
local claim, fromGrant = tonumber(claimMs), tonumber(grantLeaseMs)
local renewed = nil
if claim > 0 and expiry - now <= claim then
  if fromGrant > claim then renewed = expiry + fromGrant - claim end
elseif claim == 0 or expiry < now + tonumber(leaseMs) then
  renewed = now + tonumber(leaseMs)
end
if renewed then
  redis.call('HSET', leasesKey, hold, permits .. ' ' .. since .. ' ' .. renewed)
  ${lengthenTtl("leasesKey", "renewed - now")}
end
return {1}`,
});

/** The field naming hold `fencingToken` of `owner` in the holds (SemaphoreKeys.leases). */
export function holdMember(owner: string, fencingToken: number): string {
  return `${owner} ${fencingToken}`;
}

/**
 * True when the hold was re-armed, false when it is gone.
 * @param claim a push hand-off's claim window and the hold's lease counted from that grant,
 *   which the server anchors at the grant while nothing re-armed the hold since
 */
export async function extendPermits(
  ctx: OperationContext,
  keys: SemaphoreKeys,
  owner: string,
  fencingToken: number,
  leaseMs: number,
  claim?: { readonly claimMs: number; readonly grantLeaseMs: number },
): Promise<boolean> {
  const [held] = await runScript(
    ctx,
    SEMAPHORE_EXTEND,
    { leasesKey: keys.leases },
    {
      hold: holdMember(owner, fencingToken),
      leaseMs,
      claimMs: claim?.claimMs ?? 0,
      grantLeaseMs: claim?.grantLeaseMs ?? 0,
    },
  );
  return held === 1;
}

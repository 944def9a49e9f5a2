/**
 * Re-arms one hold's lease to `leaseMs` from now (server time): `extend()` and the watchdog. A
 * hold whose lease has already passed is pruned and reported gone, never re-created: a renewal
 * that arrives after the permits returned must not take them again behind the back of whoever
 * got them since (redis-semaphore#175). Setting the same expiry twice is harmless, so a re-send
 * needs no operation id.
 */
import type { OperationContext } from "../../hold/context.js";
import { SERVER_NOW_MS } from "../../hold/lua.js";
import { defineScript, runScript, YES_OR_NO } from "../../hold/script.js";
import type { SemaphoreKeys } from "./keys.js";
import { expireWithLastLease, pruneExpiredLeases } from "./lua.js";

// KEYS: 1 leases, 2 counts. ARGV: 1 the hold (`<owner> <fencing token>`), 2 lease ms, 3 the
//       claim window a push hand-off granted (0: none), 4 the hold's lease counted from that
//       grant. While the hold's lease is still within the claim window (nothing re-armed it since
//       the grant), it grows by (4 - 3), so the hold ends exactly that lease after the grant
//       however late this request arrives (as lock.extend does); else 2 from now. A claim never
//       shortens: an extend or a replay re-armed the lease since the grant, and its sender trusts
//       that (an extend's answer may come after the claim's).
// Reply: {1} re-armed; {0} the hold is gone (released, expired or force-released).
export const SEMAPHORE_EXTEND = defineScript({
  name: "semaphore.extend",
  keys: ["leasesKey", "countsKey"],
  args: ["hold", "leaseMs", "claimMs", "grantLeaseMs"],
  replies: YES_OR_NO,
  lua: `${SERVER_NOW_MS}
local expiry = tonumber(redis.call('ZSCORE', leasesKey, hold) or '0')
if expiry <= now then
  ${pruneExpiredLeases("leasesKey", "countsKey")}
  return {0}
end
local claim, fromGrant = tonumber(claimMs), tonumber(grantLeaseMs)
if claim > 0 and expiry - now <= claim then
  if fromGrant > claim then redis.call('ZADD', leasesKey, expiry + fromGrant - claim, hold) end
elseif claim == 0 or expiry < now + tonumber(leaseMs) then
  redis.call('ZADD', leasesKey, now + tonumber(leaseMs), hold)
end
${expireWithLastLease("leasesKey", "countsKey")}
return {1}`,
});

/** The member naming hold `fencingToken` of `owner` in the leases and counts. */
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
    { leasesKey: keys.leases, countsKey: keys.counts },
    {
      hold: holdMember(owner, fencingToken),
      leaseMs,
      claimMs: claim?.claimMs ?? 0,
      grantLeaseMs: claim?.grantLeaseMs ?? 0,
    },
  );
  return held === 1;
}

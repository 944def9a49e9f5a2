/**
 * Re-arms one hold's lease to `leaseMs` from now (server time): `extend()` and the watchdog. A
 * hold whose lease has already passed is pruned and reported gone, never re-created: a renewal
 * that arrives after the permits returned must not take them again behind the back of whoever
 * got them since (redis-semaphore#175). Setting the same expiry twice is harmless, so a re-send
 * needs no operation id.
 */
import type { OperationContext } from "../context.js";
import { SERVER_NOW_MS } from "../lua.js";
import { YES_OR_NO } from "../reply.js";
import { defineScript, runScript } from "../script.js";
import type { SemaphoreKeys } from "./keys.js";
import { expireWithLastLease, pruneExpiredLeases } from "./lua.js";

// KEYS: 1 leases, 2 counts. ARGV: 1 the hold (`<owner> <fencing token>`), 2 lease ms
// Reply: {1} re-armed; {0} the hold is gone (released, expired or force-released).
export const SEMAPHORE_EXTEND = defineScript({
  name: "semaphore.extend",
  keys: ["leasesKey", "countsKey"],
  args: ["hold", "leaseMs"],
  replies: YES_OR_NO,
  lua: `${SERVER_NOW_MS}
${pruneExpiredLeases("leasesKey", "countsKey")}
if not redis.call('ZSCORE', leasesKey, hold) then return {0} end
redis.call('ZADD', leasesKey, now + tonumber(leaseMs), hold)
${expireWithLastLease("leasesKey", "countsKey")}
return {1}`,
});

/** The member naming hold `fencingToken` of `owner` in the leases and counts. */
export function holdMember(owner: string, fencingToken: number): string {
  return `${owner} ${fencingToken}`;
}

/** True when the hold was re-armed, false when it is gone. */
export async function extendPermits(
  ctx: OperationContext,
  keys: SemaphoreKeys,
  owner: string,
  fencingToken: number,
  leaseMs: number,
): Promise<boolean> {
  const [held] = await runScript(
    ctx,
    SEMAPHORE_EXTEND,
    { leasesKey: keys.leases, countsKey: keys.counts },
    { hold: holdMember(owner, fencingToken), leaseMs },
  );
  return held === 1;
}

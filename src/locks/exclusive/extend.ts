/**
 * Re-arm an owner's lease to at least `leaseMs` from now. Used by `extend()` and by the watchdog.
 * All holds of one owner share the key, so the TTL only ever grows: a short extend of an inner
 * hold must not cut the lease an outer hold was promised. It carries no operation id: re-sending
 * it is harmless.
 */

import type { OperationContext } from "../../hold/context.js";
import { refuseLaterHold } from "../../hold/lua.js";
import type { LockKeys } from "../../hold/script.js";
import { defineScript, runScript, YES_OR_NO } from "../../hold/script.js";

// KEYS: 1 lock hash, 2 its fence counter. ARGV: 1 owner, 2 lease ms, 3 the claim
//       window a push hand-off granted (0: none), 4 the hold's lease counted from that grant,
//       5 the fencing token of the hold meant (0: whichever hold the owner has; else a later
//       hold of the owner is left alone and the answer is {0}: see refuseLaterHold). While the TTL is still within
//       the claim window (nothing re-armed it since the grant), it grows by (4 - 3), so the hold
//       ends exactly that lease after the grant however late this request arrives; else 2 from
//       now, as without a claim window.
// Reply: {1} re-armed (or already ending later); {0} the owner holds nothing (released, expired or taken).
export const EXTEND = defineScript({
  name: "lock.extend",
  keys: ["lockKey", "fenceKey"],
  args: ["owner", "leaseMs", "claimMs", "grantLeaseMs", "fencingToken"],
  replies: YES_OR_NO,
  lua: `if redis.call('HEXISTS', lockKey, owner) == 0 then return {0} end
${refuseLaterHold("fenceKey", "fencingToken")}
local pttl = redis.call('PTTL', lockKey)
local claim = tonumber(claimMs)
local fromGrant = tonumber(grantLeaseMs)
if claim > 0 and pttl >= 0 and pttl <= claim then
  if fromGrant > claim then redis.call('PEXPIRE', lockKey, pttl + fromGrant - claim) end
elseif pttl < tonumber(leaseMs) then
  redis.call('PEXPIRE', lockKey, leaseMs)
end
return {1}`,
});

/**
 * True when the lease was re-armed, false when the owner no longer holds the lock (or, with
 * `fencingToken`, no longer the hold with that token).
 * @param hold.claim a push hand-off's claim window and the hold's lease counted from that grant,
 *   which the server anchors at the grant while nothing re-armed the hold since
 * @param hold.fencingToken the token of the hold meant (a handle's, or the one its watchdog
 *   renews); omitted only by `lock.release({ owner })`-style calls that act on whichever hold
 */
export async function extendLease(
  ctx: OperationContext,
  keys: LockKeys,
  owner: string,
  leaseMs: number,
  hold: {
    readonly claim?: { readonly claimMs: number; readonly grantLeaseMs: number } | undefined;
    readonly fencingToken?: number;
  } = {},
): Promise<boolean> {
  const { claim, fencingToken = 0 } = hold;
  const reply = await runScript(
    ctx,
    EXTEND,
    { lockKey: keys.lock, fenceKey: keys.fence },
    {
      owner,
      leaseMs,
      claimMs: claim?.claimMs ?? 0,
      grantLeaseMs: claim?.grantLeaseMs ?? 0,
      fencingToken,
    },
  );
  return reply[0] === 1;
}

/**
 * Re-arm an owner's lease to at least `leaseMs` from now. Used by `extend()` and by the watchdog.
 * All holds of one owner share the key, so the TTL only ever grows: a short extend of an inner
 * hold must not cut the lease an outer hold was promised. It carries no operation id: re-sending
 * it is harmless.
 */

import type { OperationContext } from "../context.js";
import type { LockKeys } from "../keys.js";
import { YES_OR_NO } from "../reply.js";
import { defineScript, runScript } from "../script.js";

// KEYS: 1 lock hash. ARGV: 1 owner, 2 lease ms
// Reply: {1} re-armed (or already ending later); {0} the owner holds nothing (released, expired or taken).
export const EXTEND = defineScript({
  name: "lock.extend",
  keys: ["lockKey"],
  args: ["owner", "leaseMs"],
  replies: YES_OR_NO,
  lua: `if redis.call('HEXISTS', lockKey, owner) == 0 then return {0} end
if redis.call('PTTL', lockKey) < tonumber(leaseMs) then
  redis.call('PEXPIRE', lockKey, leaseMs)
end
return {1}`,
});

/** True when the lease was re-armed, false when the owner no longer holds the lock. */
export async function extendLease(
  ctx: OperationContext,
  keys: LockKeys,
  owner: string,
  leaseMs: number,
): Promise<boolean> {
  const reply = await runScript(ctx, EXTEND, { lockKey: keys.lock }, { owner, leaseMs });
  return reply[0] === 1;
}

/**
 * Re-arm an owner's lease to `leaseMs` from now. Used by `extend()` and by the watchdog.
 * It carries no operation id: setting the same TTL again is harmless, so a re-send is safe.
 */

import type { OperationContext } from "../context.js";
import type { LockKeys } from "../keys.js";
import { YES_OR_NO } from "../reply.js";
import { defineScript, runScript } from "../script.js";

// KEYS: 1 lock hash. ARGV: 1 owner, 2 lease ms
// Reply: {1} re-armed; {0} the owner holds nothing (released, expired or taken).
export const EXTEND = defineScript({
  name: "lock.extend",
  keys: ["lockKey"],
  args: ["owner", "leaseMs"],
  replies: YES_OR_NO,
  lua: `if redis.call('HEXISTS', lockKey, owner) == 0 then return {0} end
redis.call('PEXPIRE', lockKey, leaseMs)
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

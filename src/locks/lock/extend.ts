/**
 * Re-arm an owner's lease to `leaseMs` from now. Used by `extend()` and by the watchdog.
 * It carries no operation id: setting the same TTL again is harmless, so a re-send is safe.
 */
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { OperationContext } from "../context.js";
import type { LockKeys } from "../keys.js";
import { checkedReply, YES_OR_NO } from "../reply.js";

// KEYS: 1 lock hash. ARGV: 1 owner, 2 lease ms
// Reply: {1} re-armed; {0} the owner holds nothing (released, expired or taken).
export const EXTEND = new Script(
  "lock.extend",
  `if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return {0} end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1}`,
);

/** True when the lease was re-armed, false when the owner no longer holds the lock. */
export async function extendLease(
  ctx: OperationContext,
  keys: LockKeys,
  owner: string,
  leaseMs: number,
): Promise<boolean> {
  const raw = await callScript(
    ctx.redis,
    EXTEND,
    [keys.lock],
    [owner, String(leaseMs)],
    ctx.retry,
    ctx.observer,
  );
  return checkedReply(raw, EXTEND.name, YES_OR_NO)[0] === 1;
}

/**
 * Re-arm one read hold's lease to `leaseMs` from now (extend() and the watchdog). Setting the
 * same expiry again is harmless, so a re-send needs no operation id.
 */
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { OperationContext } from "../context.js";
import type { ReadWriteLockKeys } from "../keys.js";
import { SERVER_NOW_MS } from "../lua.js";
import { checkedReply, YES_OR_NO } from "../reply.js";
import { expireReadsWithLastHold, pruneExpiredReads } from "./lua.js";

// KEYS: 1 reads, 2 readers. ARGV: 1 owner, 2 hold id, 3 lease ms
// Reply: {1} re-armed; {0} the hold is gone (released, expired or force-released).
export const READ_EXTEND = new Script(
  "readWriteLock.extendRead",
  `${SERVER_NOW_MS}
${pruneExpiredReads("KEYS[1]", "KEYS[2]")}
local hold = ARGV[1] .. ' ' .. ARGV[2]
if not redis.call('ZSCORE', KEYS[1], hold) then return {0} end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), hold)
${expireReadsWithLastHold("KEYS[1]", "KEYS[2]")}
return {1}`,
);

/** True when the hold was re-armed, false when it is gone. */
export async function extendReadHold(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
  owner: string,
  holdId: string,
  leaseMs: number,
): Promise<boolean> {
  const raw = await callScript(
    ctx.redis,
    READ_EXTEND,
    [keys.reads, keys.readers],
    [owner, holdId, String(leaseMs)],
    ctx.retry,
    ctx.observer,
  );
  return checkedReply(raw, READ_EXTEND.name, YES_OR_NO)[0] === 1;
}

/**
 * Re-arm one read hold's lease to `leaseMs` from now (extend() and the watchdog). Setting the
 * same expiry again is harmless, so a re-send needs no operation id.
 */

import type { OperationContext } from "../../hold/context.js";
import { SERVER_NOW_MS } from "../../hold/lua.js";
import type { ReadWriteLockKeys } from "../../hold/script.js";
import { defineScript, runScript, YES_OR_NO } from "../../hold/script.js";
import { expireReadsWithLastHold, pruneExpiredReads } from "./lua.js";

// KEYS: 1 reads. ARGV: 1 owner, 2 hold id, 3 lease ms
// Reply: {1} re-armed; {0} the hold is gone (released, expired or force-released).
export const READ_EXTEND = defineScript({
  name: "readWriteLock.extendRead",
  keys: ["readsKey"],
  args: ["owner", "holdId", "leaseMs"],
  replies: YES_OR_NO,
  lua: `${SERVER_NOW_MS}
local hold = owner .. ' ' .. holdId
-- The only read hold (the common case: one reader), live: its end is the set's end.
local only = redis.call('ZRANGE', readsKey, 0, 1, 'WITHSCORES')
if only[1] == hold and not only[3] and tonumber(only[2]) > now then
  redis.call('ZADD', readsKey, now + tonumber(leaseMs), hold)
  redis.call('PEXPIRE', readsKey, leaseMs)
  return {1}
end
${pruneExpiredReads("readsKey")}
if not redis.call('ZSCORE', readsKey, hold) then return {0} end
redis.call('ZADD', readsKey, now + tonumber(leaseMs), hold)
${expireReadsWithLastHold("readsKey")}
return {1}`,
});

/** True when the hold was re-armed, false when it is gone. */
export async function extendReadHold(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
  owner: string,
  holdId: string,
  leaseMs: number,
): Promise<boolean> {
  const reply = await runScript(
    ctx,
    READ_EXTEND,
    { readsKey: keys.reads },
    { owner, holdId, leaseMs },
  );
  return reply[0] === 1;
}

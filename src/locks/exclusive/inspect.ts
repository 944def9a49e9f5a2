/** The lock's state in one request. */

import type { OperationContext } from "../../hold/context.js";
import type { LockKeys } from "../../hold/script.js";
import { defineScript, runScript, ttlOrNull } from "../../hold/script.js";
import type { LockState } from "../../hold/state.js";

// KEYS: 1 lock hash. ARGV: 1 owner, or '' for whoever holds it
// Reply: {locked 0/1, pttl, holds}
export const INSPECT = defineScript({
  name: "lock.inspect",
  keys: ["lockKey"],
  args: ["owner"],
  replies: { 1: [3], 0: [3] },
  lua: `if redis.call('EXISTS', lockKey) == 0 then return {0, -2, 0} end
local holds = 0
if owner == '' then
  local counts = redis.call('HVALS', lockKey)
  for i = 1, #counts do holds = holds + tonumber(counts[i]) end
else
  holds = tonumber(redis.call('HGET', lockKey, owner) or '0')
end
return {1, redis.call('PTTL', lockKey), holds}`,
});

export async function inspectLock(
  ctx: OperationContext,
  keys: LockKeys,
  owner: string | undefined,
): Promise<LockState> {
  const reply = await runScript(ctx, INSPECT, { lockKey: keys.lock }, { owner: owner ?? "" });
  const [locked, pttl, holds] = reply;
  return { locked: locked === 1, ttlMs: locked === 1 ? ttlOrNull(pttl) : null, holds: holds ?? 0 };
}

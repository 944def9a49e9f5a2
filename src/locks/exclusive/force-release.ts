/** Delete the lock whoever holds it (Redisson forceUnlock). The fence counter stays. */
import { newOperationId } from "../../ids.js";
import type { OperationContext } from "../context.js";
import type { LockKeys } from "../keys.js";
import { YES_OR_NO } from "../reply.js";
import { defineScript, runScript } from "../script.js";

// KEYS: 1 lock hash, 2 operation record. ARGV: 1 operation record ttl ms
// Reply: {1} deleted; {0} was not locked. A re-send replays the first answer instead of
// deleting a lock someone acquired in between.
export const FORCE_RELEASE = defineScript({
  name: "lock.forceRelease",
  keys: ["lockKey", "operationKey"],
  args: ["operationTtlMs"],
  replies: YES_OR_NO,
  lua: `local replay = redis.call('GET', operationKey)
if replay then return {tonumber(replay)} end
local deleted = redis.call('DEL', lockKey)
redis.call('SET', operationKey, deleted, 'PX', operationTtlMs)
return {deleted}`,
});

/** True when a lock was deleted. */
export async function forceRelease(ctx: OperationContext, keys: LockKeys): Promise<boolean> {
  const reply = await runScript(
    ctx,
    FORCE_RELEASE,
    { lockKey: keys.lock, operationKey: keys.operation(newOperationId()) },
    { operationTtlMs: ctx.operationTtlMs },
  );
  return reply[0] === 1;
}

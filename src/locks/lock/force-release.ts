/** Delete the lock whoever holds it (Redisson forceUnlock). The fence counter stays. */
import { newOperationId } from "../../ids.js";
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { OperationContext } from "../context.js";
import type { LockKeys } from "../keys.js";
import { checkedReply, YES_OR_NO } from "../reply.js";

// KEYS: 1 lock hash, 2 operation record. ARGV: 1 operation record ttl ms
// Reply: {1} deleted; {0} was not locked. A re-send replays the first answer instead of
// deleting a lock someone acquired in between.
export const FORCE_RELEASE = new Script(
  "lock.forceRelease",
  `local replay = redis.call('GET', KEYS[2])
if replay then return {tonumber(replay)} end
local deleted = redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], deleted, 'PX', ARGV[1])
return {deleted}`,
);

/** True when a lock was deleted. */
export async function forceRelease(ctx: OperationContext, keys: LockKeys): Promise<boolean> {
  const raw = await callScript(
    ctx.redis,
    FORCE_RELEASE,
    [keys.lock, keys.operation(newOperationId())],
    [String(ctx.operationTtlMs)],
    ctx.retry,
    ctx.observer,
  );
  return checkedReply(raw, FORCE_RELEASE.name, YES_OR_NO)[0] === 1;
}

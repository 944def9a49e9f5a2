/**
 * Undo one database's acquire of a RedLock attempt, exactly, by its operation id: when the
 * attempt failed, or when that database answered too late or not at all. If the acquire ran,
 * its hold is released once; if it has not run yet, a mark makes a late copy of it (a re-send
 * still in flight) replay as "not acquired" instead of taking the lock.
 */
import { YES_OR_NO } from "../reply.js";
import { defineScript, runScript } from "../script.js";
import type { Database } from "./databases.js";

// KEYS: 1 lock hash, 2 the acquire's operation record: lock.acquire leaves the fencing token
//       there (>= 1) when it took a hold; this script leaves 0 (nothing was or will be taken)
//       or -1 (the hold was undone)
// ARGV: 1 owner, 2 record ttl ms
// Reply: {1} the acquire's hold is undone (now or by an earlier send); {0} there was none.
export const UNDO_ACQUIRE = defineScript({
  name: "redLock.undoAcquire",
  keys: ["lockKey", "operationKey"],
  args: ["owner", "operationTtlMs"],
  replies: YES_OR_NO,
  lua: `local record = redis.call('GET', operationKey)
if not record then
  redis.call('SET', operationKey, 0, 'PX', operationTtlMs)
  return {0}
end
local token = tonumber(record)
if token == -1 then return {1} end
if token <= 0 then return {0} end
if redis.call('HEXISTS', lockKey, owner) == 0 then
  redis.call('SET', operationKey, 0, 'PX', operationTtlMs)
  return {0}
end
if redis.call('HINCRBY', lockKey, owner, -1) <= 0 then
  redis.call('HDEL', lockKey, owner)
end
redis.call('SET', operationKey, -1, 'PX', operationTtlMs)
return {1}`,
});

/** True when a hold of that acquire was released. */
export async function undoAcquire(
  db: Database,
  owner: string,
  operationId: string,
): Promise<boolean> {
  const { ctx, keys } = db;
  const [undone] = await runScript(
    ctx,
    UNDO_ACQUIRE,
    { lockKey: keys.lock, operationKey: keys.operation(operationId) },
    { owner, operationTtlMs: ctx.operationTtlMs },
  );
  return undone === 1;
}

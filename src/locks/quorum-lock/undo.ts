/**
 * Undo one database's acquire exactly, by operation id, after a lost attempt or a late or
 * missing answer: a hold it took is released once; if it has not run, a mark makes a late copy
 * replay as "not acquired". An undo after that hold ended releases nothing, even if the owner
 * holds the lock again: that later hold drew a newer fencing token.
 */
import { fenceStillAt } from "../../hold/lua.js";
import { defineScript, runScript, YES_OR_NO } from "../../hold/script.js";
import type { Database } from "./databases.js";

// KEYS: 1 lock hash, 2 the acquire's operation record: lock.acquire leaves the fencing token
//       there (>= 1) when it took a hold; this script leaves 0 (nothing was or will be taken)
//       or -1 (the hold was undone), 3 the fence counter: still at that token while the hold
//       the acquire took (or re-entered) stands; a later first hold moved it on
// ARGV: 1 owner, 2 record ttl ms
// Reply: {1} the acquire's hold is undone (now or by an earlier send); {0} there was none.
export const UNDO_ACQUIRE = defineScript({
  name: "redLock.undoAcquire",
  keys: ["lockKey", "operationKey", "fenceKey"],
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
if redis.call('HEXISTS', lockKey, owner) == 0 or not (${fenceStillAt("fenceKey", "token")}) then
  redis.call('SET', operationKey, 0, 'PX', operationTtlMs)
  return {0}
end
if redis.call('HINCRBY', lockKey, owner, -1) <= 0 then
  redis.call('HDEL', lockKey, owner)
end
redis.call('SET', operationKey, -1, 'PX', operationTtlMs)
return {1}`,
});

export async function undoAcquire(
  db: Database,
  owner: string,
  operationId: string,
): Promise<boolean> {
  const { ctx, keys } = db;
  const [undone] = await runScript(
    ctx,
    UNDO_ACQUIRE,
    { lockKey: keys.lock, operationKey: keys.operation(operationId), fenceKey: keys.fence },
    { owner, operationTtlMs: ctx.operationTtlMs },
  );
  return undone === 1;
}

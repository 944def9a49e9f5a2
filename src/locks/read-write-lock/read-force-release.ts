/** Drop every read hold whoever holds it (Redisson forceUnlock on the read lock). */

import type { OperationContext } from "../../hold/context.js";
import { SERVER_NOW_MS } from "../../hold/lua.js";
import { PACE_TTL_MS, timeHandedOffHold } from "../../hold/pace.js";
import { handOffFreedLock } from "../../hold/queue/hand-off.js";
import type { ReadWriteLockKeys } from "../../hold/script.js";
import { defineScript, runScript, YES_OR_NO } from "../../hold/script.js";
import { newOperationId } from "../../platform.js";
import { READ_ENDING_KEYS, readEndingKeys } from "./script-keys.js";

// KEYS: 1 reads, 2 operation record, 3 write hash, 4 fence, 5 the queue of waiting writers,
//       6 their deadlines, 7 parked waiters, 8–15 the hand-off channels, 16 waiting writers
//       (writer preference), 17 the pace hash (a handed-off writer's hold is timed)
// ARGV: 1 operation record ttl ms, 2 pace ttl ms
// Reply: {1} live read holds were dropped; {0} there were none. A re-send replays the first
// answer instead of dropping holds taken in between.
// While nobody writes, the freed lock goes to the head of the queue when that writer is parked
// (push mode), as after the last read hold's release.
export const READ_FORCE_RELEASE = defineScript({
  name: "readWriteLock.forceReleaseRead",
  keys: READ_ENDING_KEYS,
  args: ["operationTtlMs", "paceTtlMs"],
  replies: YES_OR_NO,
  lua: `local replay = redis.call('GET', operationKey)
if replay then return {tonumber(replay)} end
${SERVER_NOW_MS}
local dropped = 0
if redis.call('ZCOUNT', readsKey, now + 1, '+inf') > 0 then dropped = 1 end
redis.call('DEL', readsKey)
if redis.call('EXISTS', lockKey) == 0 then
  ${handOffFreedLock("queueKey", "timeoutsKey", "parkedKey", { writersKey: "writersKey" })}
  ${timeHandedOffHold("holdStatsKey")}
end
redis.call('SET', operationKey, dropped, 'PX', operationTtlMs)
return {dropped}`,
});

/** True when live read holds were dropped. */
export async function forceReleaseReads(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
): Promise<boolean> {
  const reply = await runScript(ctx, READ_FORCE_RELEASE, readEndingKeys(keys, newOperationId()), {
    operationTtlMs: ctx.operationTtlMs,
    paceTtlMs: PACE_TTL_MS,
  });
  return reply[0] === 1;
}

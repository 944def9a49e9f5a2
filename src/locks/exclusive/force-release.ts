/** Delete the lock whoever holds it (Redisson forceUnlock). The fence counter stays. */

import type { OperationContext } from "../../hold/context.js";
import { SERVER_NOW_MS } from "../../hold/lua.js";
import { PACE_TTL_MS, timeHandedOffHold } from "../../hold/pace.js";
import {
  HAND_OFF_CHANNEL_KEYS,
  handOffChannelKeys,
  handOffFreedLock,
} from "../../hold/queue/hand-off.js";
import type { LockKeys, ReadWriteLockKeys } from "../../hold/script.js";
import { defineScript, runScript, YES_OR_NO } from "../../hold/script.js";
import { newOperationId } from "../../platform.js";

// KEYS: 1 lock hash, 2 operation record, 3 fence counter (a hand-off's token), 4 queue,
//       5 timeouts, 6 parked waiters, 7–14 the hand-off channels, 15 the pace hash (a
//       handed-off hold is timed, see timeHandedOffHold); optional, the write lock's: 16 read
//       holds (no hand-off while any is live), 17 waiting writers.
// ARGV: 1 operation record ttl ms, 2 pace ttl ms
// Reply: {1} deleted; {0} was not locked. A re-send replays the first answer instead of
// deleting a lock someone acquired in between.
// The freed lock goes to a parked head waiter, as after a release: else it sleeps on.
const OPTIONAL_FORCE_RELEASE_KEYS = ["readsKey", "writersKey"] as const;

export const FORCE_RELEASE = defineScript({
  name: "lock.forceRelease",
  keys: [
    "lockKey",
    "operationKey",
    "fenceKey",
    "queueKey",
    "timeoutsKey",
    "parkedKey",
    ...HAND_OFF_CHANNEL_KEYS,
    "holdStatsKey",
    ...OPTIONAL_FORCE_RELEASE_KEYS,
  ],
  optionalKeys: OPTIONAL_FORCE_RELEASE_KEYS,
  args: ["operationTtlMs", "paceTtlMs"],
  replies: YES_OR_NO,
  lua: `local replay = redis.call('GET', operationKey)
if replay then return {tonumber(replay)} end
${SERVER_NOW_MS}
local deleted = redis.call('DEL', lockKey)
${handOffFreedLock("queueKey", "timeoutsKey", "parkedKey", { readsKey: "readsKey", writersKey: "writersKey" })}
${timeHandedOffHold("holdStatsKey")}
redis.call('SET', operationKey, deleted, 'PX', operationTtlMs)
return {deleted}`,
});

/** True when a lock was deleted. */
export async function forceRelease(
  ctx: OperationContext,
  keys: LockKeys,
  readWrite?: Pick<ReadWriteLockKeys, "reads" | "writers">,
): Promise<boolean> {
  const reply = await runScript(
    ctx,
    FORCE_RELEASE,
    {
      lockKey: keys.lock,
      operationKey: keys.operation(newOperationId()),
      fenceKey: keys.fence,
      queueKey: keys.queue,
      timeoutsKey: keys.timeouts,
      parkedKey: keys.parked,
      ...handOffChannelKeys(keys),
      holdStatsKey: keys.holdStats,
      readsKey: readWrite?.reads,
      writersKey: readWrite?.writers,
    },
    { operationTtlMs: ctx.operationTtlMs, paceTtlMs: PACE_TTL_MS },
  );
  return reply[0] === 1;
}

/**
 * Returns one hold's permits. Exactly once: the result is recorded under the release's
 * operation id, and a re-sent release replays it instead of reporting the hold gone.
 */
import type { OperationContext } from "../../hold/context.js";
import { SERVER_NOW_MS } from "../../hold/lua.js";
import { learnAverage, PACE_TTL_MS } from "../../hold/pace.js";
import { defineScript, runScript } from "../../hold/script.js";
import type { ReleaseResult } from "../../hold/state.js";
import { holdMember } from "./extend.js";
import { grantToParkedWaiters, PERMIT_HAND_OFF_KEYS, permitHandOffKeys } from "./hand-off.js";
import type { SemaphoreKeys } from "./keys.js";
import { pruneExpiredLeases } from "./lua.js";

// KEYS: 1 leases, 2 counts, 3 operation record, 4 pace hash (see SemaphoreKeys.pace),
//       5 capacity, then PERMIT_HAND_OFF_KEYS (fence, queue, timeouts, parked waiters, grants,
//       the hand-off channels)
// ARGV: 1 the hold, 2 operation record ttl ms, 3 pace ttl ms
// Reply: {1} released (or a re-send of a release that did); {0} the hold was gone.
// The operation record is claimed first (SET NX: also the replay check) and dropped again when
// the hold was gone. A release that nobody waits behind (no queue, no parked waiter) ends there
// (issue 42's fast path): nothing to grant, and nobody to pace by the hold's length. Else it
// folds its hold's length (grant to release) into the average hold, from which waiters learn
// how fast permits come back, and grants the permits that came back (its own, and any an
// expired lease returned) to parked waiters (grantToParkedWaiters).
export const SEMAPHORE_RELEASE = defineScript({
  name: "semaphore.release",
  keys: [
    "leasesKey",
    "countsKey",
    "operationKey",
    "paceKey",
    "capacityKey",
    ...PERMIT_HAND_OFF_KEYS,
  ],
  args: ["hold", "operationTtlMs", "paceTtlMs"],
  replies: { 1: [1], 0: [1] },
  lua: `if not redis.call('SET', operationKey, 1, 'NX', 'PX', operationTtlMs) then return {1} end
${SERVER_NOW_MS}
local released = 0
if tonumber(redis.call('ZSCORE', leasesKey, hold) or '0') > now then
  released = 1
  redis.call('ZREM', leasesKey, hold)
  if redis.call('EXISTS', queueKey, parkedKey) == 0 then
    redis.call('HDEL', countsKey, hold)
    return {1}
  end
  local grantedAt = tonumber(string.match(redis.call('HGET', countsKey, hold) or '', ' (%d+)$') or '')
  redis.call('HDEL', countsKey, hold)
  if grantedAt then
    ${learnAverage("paceKey", "hold", "now - grantedAt")}
  end
  redis.call('PEXPIRE', paceKey, paceTtlMs)
else
  redis.call('DEL', operationKey)
end
${pruneExpiredLeases("leasesKey", "countsKey")}
${grantToParkedWaiters()}
return {released}`,
});

export async function releasePermits(
  ctx: OperationContext,
  keys: SemaphoreKeys,
  owner: string,
  fencingToken: number,
  operationId: string,
): Promise<ReleaseResult> {
  const [released] = await runScript(
    ctx,
    SEMAPHORE_RELEASE,
    {
      leasesKey: keys.leases,
      countsKey: keys.counts,
      operationKey: keys.operation(operationId),
      paceKey: keys.pace,
      capacityKey: keys.capacity,
      ...permitHandOffKeys(keys),
    },
    {
      hold: holdMember(owner, fencingToken),
      operationTtlMs: ctx.operationTtlMs,
      paceTtlMs: PACE_TTL_MS,
    },
  );
  return released === 1 ? { released: true, holdsLeft: 0 } : { released: false };
}

/**
 * Returns one hold's permits. Exactly once: the result is recorded under the release's
 * operation id, and a re-sent release replays it instead of reporting the hold gone.
 */
import type { OperationContext } from "../../hold/context.js";
import { SERVER_NOW_MS } from "../../hold/lua.js";
import { learnAverage, PACE_TTL_MS } from "../../hold/pace.js";
import { clearGrantRecord } from "../../hold/queue/hand-off.js";
import { defineScript, runScript } from "../../hold/script.js";
import type { ReleaseResult } from "../../hold/state.js";
import { waiterMember } from "./acquire.js";
import { holdMember } from "./extend.js";
import { grantToParkedWaiters, PERMIT_HAND_OFF_KEYS, permitHandOffKeys } from "./hand-off.js";
import type { SemaphoreKeys } from "./keys.js";
import { loadHolds } from "./lua.js";

// KEYS: 1 holds (SemaphoreKeys.leases), 2 operation record, 3 pace hash (see
//       SemaphoreKeys.pace), 4 capacity, then PERMIT_HAND_OFF_KEYS (fence, queue, timeouts,
//       parked waiters, the hand-off channels), then (optional) the operation record of the
//       acquisition that ARGV 4 names
// ARGV: 1 the hold, 2 operation record ttl ms, 3 pace ttl ms, 4 the queue member of the waiter
//       the hold was granted to by word (`<owner> <operation id> <permits>`: its grant's record
//       is cleared, see clearGrantRecord), else empty
// Reply: {1} released (or a re-send of a release that did); {0} the hold was gone.
// The operation record is claimed first (SET NX: also the replay check) and dropped again when
// the hold was gone. The sole hold the fast path took (its entry only its permits) is live while
// its key is, so a release of it that nobody waits behind (no queue, no parked waiter) deletes
// the key and reads no clock (issue 42's fast path). Else it folds its hold's length (grant to
// release, where the grant is known) into the average hold, from which waiters learn how fast
// permits come back, and grants the permits that came back (its own, and any an expired lease
// returned) to parked waiters (grantToParkedWaiters).
export const SEMAPHORE_RELEASE = defineScript({
  name: "semaphore.release",
  keys: [
    "leasesKey",
    "operationKey",
    "paceKey",
    "capacityKey",
    ...PERMIT_HAND_OFF_KEYS,
    "grantOperationKey",
  ],
  optionalKeys: ["grantOperationKey"],
  args: ["hold", "operationTtlMs", "paceTtlMs", "grantedWaiter"],
  replies: { 1: [1], 0: [1] },
  lua: `if not redis.call('SET', operationKey, 1, 'NX', 'PX', operationTtlMs) then return {1} end
${clearGrantRecord("parkedKey", "grantOperationKey", "string.match(hold, ' (%d+)$')")}
local sole = string.match(redis.call('HGET', leasesKey, hold) or '', '^%d+$')
local waited = nil
if sole then
  waited = redis.call('EXISTS', queueKey, parkedKey) > 0
  if not waited then
    redis.call('DEL', leasesKey)
    return {1}
  end
end
${SERVER_NOW_MS}
${loadHolds("leasesKey", true)}
local released = 0
local mine = holds[hold]
if mine then
  released = 1
  dropHold(hold)
  if waited == nil then waited = redis.call('EXISTS', queueKey, parkedKey) > 0 end
  if not waited then return {1} end
  if mine[2] ~= '-' then
    ${learnAverage("paceKey", "hold", "now - tonumber(mine[2])")}
  else
    redis.call('PEXPIRE', paceKey, paceTtlMs)
  end
else
  redis.call('DEL', operationKey)
end
${grantToParkedWaiters()}
return {released}`,
});

export async function releasePermits(
  ctx: OperationContext,
  keys: SemaphoreKeys,
  owner: string,
  fencingToken: number,
  operationId: string,
  /** The acquisition's operation id where a hand-off granted the hold by word. */
  grantOf?: string,
  /** The permits it holds (the waiter's member names them). */
  permits = 1,
): Promise<ReleaseResult> {
  const [released] = await runScript(
    ctx,
    SEMAPHORE_RELEASE,
    {
      leasesKey: keys.leases,
      operationKey: keys.operation(operationId),
      paceKey: keys.pace,
      capacityKey: keys.capacity,
      ...permitHandOffKeys(keys),
      grantOperationKey: grantOf === undefined ? undefined : keys.operation(grantOf),
    },
    {
      hold: holdMember(owner, fencingToken),
      operationTtlMs: ctx.operationTtlMs,
      paceTtlMs: PACE_TTL_MS,
      grantedWaiter: grantOf === undefined ? "" : waiterMember(owner, grantOf, permits),
    },
  );
  return released === 1 ? { released: true, holdsLeft: 0 } : { released: false };
}

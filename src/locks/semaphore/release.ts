/**
 * Returns one hold's permits. Exactly once: the result is recorded under the release's
 * operation id, and a re-sent release replays it instead of reporting the hold gone.
 */
import type { OperationContext } from "../context.js";
import { SERVER_NOW_MS } from "../lua.js";
import { defineScript, runScript } from "../script.js";
import type { ReleaseResult } from "../state.js";
import { holdMember } from "./extend.js";
import type { SemaphoreKeys } from "./keys.js";
import { pruneExpiredLeases } from "./lua.js";

// KEYS: 1 leases, 2 counts, 3 operation record. ARGV: 1 the hold, 2 operation record ttl ms
// Reply: {1} released (or a re-send of a release that did); {0} the hold was gone.
export const SEMAPHORE_RELEASE = defineScript({
  name: "semaphore.release",
  keys: ["leasesKey", "countsKey", "operationKey"],
  args: ["hold", "operationTtlMs"],
  replies: { 1: [1], 0: [1] },
  lua: `if redis.call('GET', operationKey) then return {1} end
${SERVER_NOW_MS}
${pruneExpiredLeases("leasesKey", "countsKey")}
if redis.call('ZREM', leasesKey, hold) == 0 then return {0} end
redis.call('HDEL', countsKey, hold)
redis.call('SET', operationKey, 1, 'PX', operationTtlMs)
return {1}`,
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
    { leasesKey: keys.leases, countsKey: keys.counts, operationKey: keys.operation(operationId) },
    { hold: holdMember(owner, fencingToken), operationTtlMs: ctx.operationTtlMs },
  );
  return released === 1 ? { released: true, holdsLeft: 0 } : { released: false };
}

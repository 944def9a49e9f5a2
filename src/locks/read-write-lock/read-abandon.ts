/**
 * A read acquisition that gives up closes its operation: a copy of one of its attempts that
 * reaches Redis later (re-sent by the Redis client after edgelock gave up on it) then finds the
 * record `left` and takes no read hold. If such a copy ran first and took the acquisition's read
 * hold, that hold is released instead.
 */

import type { OperationContext } from "../../hold/context.js";
import type { ReadWriteLockKeys } from "../../hold/script.js";
import { defineScript, runScript } from "../../hold/script.js";
import { newOperationId } from "../../platform.js";
import { releaseReadHold } from "./read-release.js";

// KEYS: 1 the acquisition's operation record. ARGV: 1 its ttl ms.
// Reply: {1} closed (nothing was taken); {0} the operation had taken its hold.
export const READ_ABANDON = defineScript({
  name: "readWriteLock.abandonRead",
  keys: ["operationKey"],
  args: ["operationTtlMs"],
  replies: { 1: [1], 0: [1] },
  lua: `if redis.call('SET', operationKey, 'left', 'PX', operationTtlMs, 'NX') then return {1} end
return {0}`,
});

/** Closes read acquisition `operationId` of `owner`, releasing hold `holdId` if it took it. */
export async function abandonReadAcquisition(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
  owner: string,
  holdId: string,
  operationId: string,
): Promise<void> {
  const [closed] = await runScript(
    ctx,
    READ_ABANDON,
    { operationKey: keys.operation(operationId) },
    { operationTtlMs: ctx.operationTtlMs },
  );
  if (closed === 0) await releaseReadHold(ctx, keys, owner, holdId, newOperationId());
}

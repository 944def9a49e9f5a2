/**
 * Release one hold of an owner, as the reentrant lock does, and when the lock comes free record
 * how long it was held: waiters pace their polls on it.
 */
import { newOperationId } from "../../ids.js";
import type { OperationContext } from "../context.js";
import type { FairLockKeys } from "../keys.js";
import { releaseOneHold, SERVER_NOW_MS } from "../lua.js";
import { learnAverage } from "../pace.js";
import { defineScript, runScript } from "../script.js";
import type { ReleaseResult } from "../state.js";

// KEYS: 1 lock hash, 2 pace, 3 operation record. ARGV: 1 owner, 2 operation record ttl ms
// Reply: {1, holds left} released one hold; {0} the owner holds nothing.
export const FAIR_RELEASE = defineScript({
  name: "fairLock.release",
  keys: ["lockKey", "paceKey", "operationKey"],
  args: ["owner", "operationTtlMs"],
  replies: { 1: [2], 0: [1] },
  lua: releaseOneHold(
    "operationKey",
    `local at = redis.call('HGET', paceKey, 'at')
if at then
  ${SERVER_NOW_MS}
  ${learnAverage("paceKey", "hold", "now - tonumber(at)")}
  redis.call('HSET', paceKey, 'freed', now)
end`,
  ),
});

export async function releaseFairHold(
  ctx: OperationContext,
  keys: FairLockKeys,
  owner: string,
  operationId: string = newOperationId(),
): Promise<ReleaseResult> {
  const reply = await runScript(
    ctx,
    FAIR_RELEASE,
    { lockKey: keys.lock, paceKey: keys.pace, operationKey: keys.operation(operationId) },
    { owner, operationTtlMs: ctx.operationTtlMs },
  );
  const [status, left] = reply;
  return status === 1 ? { released: true, holdsLeft: left ?? 0 } : { released: false };
}

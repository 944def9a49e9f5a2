/**
 * Release one hold of an owner, as the reentrant lock does, and when the lock comes free record
 * how long it was held: waiters pace their polls on it.
 */
import { newOperationId } from "../../ids.js";
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { OperationContext } from "../context.js";
import type { FairLockKeys } from "../keys.js";
import type { ReleaseResult } from "../lock/release.js";
import { releaseOneHold, SERVER_NOW_MS } from "../lua.js";
import { learnAverage } from "../pace.js";
import { checkedReply } from "../reply.js";

// KEYS: 1 lock hash, 2 pace, 3 operation record. ARGV: 1 owner, 2 operation record ttl ms
// Reply: {1, holds left} released one hold; {0} the owner holds nothing.
export const FAIR_RELEASE = new Script(
  "fairLock.release",
  releaseOneHold(
    "KEYS[3]",
    `local at = redis.call('HGET', KEYS[2], 'at')
if at then
  ${SERVER_NOW_MS}
  ${learnAverage("KEYS[2]", "hold", "now - tonumber(at)")}
  redis.call('HSET', KEYS[2], 'freed', now)
end`,
  ),
);

export async function releaseFairHold(
  ctx: OperationContext,
  keys: FairLockKeys,
  owner: string,
  operationId: string = newOperationId(),
): Promise<ReleaseResult> {
  const raw = await callScript(
    ctx.redis,
    FAIR_RELEASE,
    [keys.lock, keys.pace, keys.operation(operationId)],
    [owner, String(ctx.operationTtlMs)],
    ctx.retry,
    ctx.observer,
  );
  const [status, left] = checkedReply(raw, FAIR_RELEASE.name, { 1: [2], 0: [1] });
  return status === 1 ? { released: true, holdsLeft: left ?? 0 } : { released: false };
}

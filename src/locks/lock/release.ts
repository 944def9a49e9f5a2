/** Release one hold of an owner: the hold count drops by one; at zero the lock is deleted. */
import { newOperationId } from "../../ids.js";
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { OperationContext } from "../context.js";
import type { LockKeys } from "../keys.js";
import { releaseOneHold, SERVER_NOW_MS } from "../lua.js";
import { learnAverage, PACE_TTL_MS } from "../pace.js";
import { checkedReply } from "../reply.js";

// KEYS: 1 lock hash, 2 operation record, 3 pace hash (optional: see acquire.ts)
// ARGV: 1 owner, 2 operation record ttl ms, 3 pace ttl ms
// Reply: {1, holds left} released one hold; {0} the owner holds nothing.
// The release that frees the lock folds this hold's length into the average hold and its mean
// deviation (weight 1/4, a sample counted as at most twice the average): they pace the waiters.
export const RELEASE = new Script(
  "lock.release",
  releaseOneHold(
    "KEYS[2]",
    `local at = KEYS[3] and redis.call('HGET', KEYS[3], 'at')
if at then
  ${SERVER_NOW_MS}
  ${learnAverage("KEYS[3]", "hold", "now - tonumber(at)", "dev")}
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
end`,
  ),
);

export type ReleaseResult =
  | { readonly released: true; holdsLeft: number }
  | { readonly released: false };

export async function releaseHold(
  ctx: OperationContext,
  keys: LockKeys,
  owner: string,
  /** Reuse the id of a release whose outcome is unknown: if it ran, this one replays it. */
  operationId: string = newOperationId(),
): Promise<ReleaseResult> {
  const raw = await callScript(
    ctx.redis,
    RELEASE,
    [keys.lock, keys.operation(operationId), keys.holdStats],
    [owner, String(ctx.operationTtlMs), String(PACE_TTL_MS)],
    ctx.retry,
    ctx.observer,
  );
  const [status, left] = checkedReply(raw, RELEASE.name, { 1: [2], 0: [1] });
  return status === 1 ? { released: true, holdsLeft: left ?? 0 } : { released: false };
}

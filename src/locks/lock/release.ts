/** Release one hold of an owner: the hold count drops by one; at zero the lock is deleted. */
import { newOperationId } from "../../ids.js";
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { OperationContext } from "../context.js";
import type { LockKeys } from "../keys.js";
import { checkedReply } from "../reply.js";

// KEYS: 1 lock hash, 2 operation record. ARGV: 1 owner, 2 operation record ttl ms
// Reply: {1, holds left} released one hold; {0} the owner holds nothing.
export const RELEASE = new Script(
  "lock.release",
  `local replay = redis.call('GET', KEYS[2])
if replay then return {1, tonumber(replay)} end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return {0} end
local left = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if left <= 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
  left = 0
end
redis.call('SET', KEYS[2], left, 'PX', ARGV[2])
return {1, left}`,
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
    [keys.lock, keys.operation(operationId)],
    [owner, String(ctx.operationTtlMs)],
    ctx.retry,
    ctx.observer,
  );
  const [status, left] = checkedReply(raw, RELEASE.name, { 1: [2], 0: [1] });
  return status === 1 ? { released: true, holdsLeft: left ?? 0 } : { released: false };
}

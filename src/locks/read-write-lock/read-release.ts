/**
 * Release one read hold: the given hold, or (without a handle) the owner's hold that expires
 * first. The owner's other holds keep their own expiries.
 */
import { newOperationId } from "../../ids.js";
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { OperationContext } from "../context.js";
import type { ReadWriteLockKeys } from "../keys.js";
import type { ReleaseResult } from "../lock/release.js";
import { SERVER_NOW_MS } from "../lua.js";
import { checkedReply } from "../reply.js";
import { pruneExpiredReads } from "./lua.js";

// KEYS: 1 reads, 2 readers, 3 operation record
// ARGV: 1 owner, 2 hold id ('' for the owner's hold that expires first), 3 operation ttl ms
// Reply: {1, read holds left to the owner} released; {0} no such live hold.
export const READ_RELEASE = new Script(
  "readWriteLock.releaseRead",
  `local replay = redis.call('GET', KEYS[3])
if replay then return {1, tonumber(replay)} end
${SERVER_NOW_MS}
${pruneExpiredReads("KEYS[1]", "KEYS[2]")}
local hold = ARGV[1] .. ' ' .. ARGV[2]
if ARGV[2] == '' then
  if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return {0} end
  hold = nil
  local live = redis.call('ZRANGE', KEYS[1], 0, -1)
  for i = 1, #live do
    if string.sub(live[i], 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then
      hold = live[i]
      break
    end
  end
  if not hold then return {0} end
end
if redis.call('ZREM', KEYS[1], hold) == 0 then return {0} end
local left = redis.call('HINCRBY', KEYS[2], ARGV[1], -1)
if left <= 0 then
  redis.call('HDEL', KEYS[2], ARGV[1])
  left = 0
end
redis.call('SET', KEYS[3], left, 'PX', ARGV[3])
return {1, left}`,
);

/** Releases read hold `holdId` of `owner`, or its earliest-expiring hold when holdId is null. */
export async function releaseReadHold(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
  owner: string,
  holdId: string | null,
  operationId: string = newOperationId(),
): Promise<ReleaseResult> {
  const raw = await callScript(
    ctx.redis,
    READ_RELEASE,
    [keys.reads, keys.readers, keys.operation(operationId)],
    [owner, holdId ?? "", String(ctx.operationTtlMs)],
    ctx.retry,
    ctx.observer,
  );
  const [status, left] = checkedReply(raw, READ_RELEASE.name, { 1: [2], 0: [1] });
  return status === 1 ? { released: true, holdsLeft: left ?? 0 } : { released: false };
}

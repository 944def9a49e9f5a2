/** Drop every read hold whoever holds it (Redisson forceUnlock on the read lock). */
import { newOperationId } from "../../ids.js";
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { OperationContext } from "../context.js";
import type { ReadWriteLockKeys } from "../keys.js";
import { SERVER_NOW_MS } from "../lua.js";
import { checkedReply, YES_OR_NO } from "../reply.js";

// KEYS: 1 reads, 2 readers, 3 operation record. ARGV: 1 operation record ttl ms
// Reply: {1} live read holds were dropped; {0} there were none. A re-send replays the first
// answer instead of dropping holds taken in between.
export const READ_FORCE_RELEASE = new Script(
  "readWriteLock.forceReleaseRead",
  `local replay = redis.call('GET', KEYS[3])
if replay then return {tonumber(replay)} end
${SERVER_NOW_MS}
local dropped = 0
if redis.call('ZCOUNT', KEYS[1], now + 1, '+inf') > 0 then dropped = 1 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SET', KEYS[3], dropped, 'PX', ARGV[1])
return {dropped}`,
);

/** True when live read holds were dropped. */
export async function forceReleaseReads(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
): Promise<boolean> {
  const raw = await callScript(
    ctx.redis,
    READ_FORCE_RELEASE,
    [keys.reads, keys.readers, keys.operation(newOperationId())],
    [String(ctx.operationTtlMs)],
    ctx.retry,
    ctx.observer,
  );
  return checkedReply(raw, READ_FORCE_RELEASE.name, YES_OR_NO)[0] === 1;
}

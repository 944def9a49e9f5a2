/** Drop every read hold whoever holds it (Redisson forceUnlock on the read lock). */
import { newOperationId } from "../../ids.js";
import type { OperationContext } from "../context.js";
import type { ReadWriteLockKeys } from "../keys.js";
import { SERVER_NOW_MS } from "../lua.js";
import { YES_OR_NO } from "../reply.js";
import { defineScript, runScript } from "../script.js";

// KEYS: 1 reads, 2 readers, 3 operation record. ARGV: 1 operation record ttl ms
// Reply: {1} live read holds were dropped; {0} there were none. A re-send replays the first
// answer instead of dropping holds taken in between.
export const READ_FORCE_RELEASE = defineScript({
  name: "readWriteLock.forceReleaseRead",
  keys: ["readsKey", "readersKey", "operationKey"],
  args: ["operationTtlMs"],
  replies: YES_OR_NO,
  lua: `local replay = redis.call('GET', operationKey)
if replay then return {tonumber(replay)} end
${SERVER_NOW_MS}
local dropped = 0
if redis.call('ZCOUNT', readsKey, now + 1, '+inf') > 0 then dropped = 1 end
redis.call('DEL', readsKey, readersKey)
redis.call('SET', operationKey, dropped, 'PX', operationTtlMs)
return {dropped}`,
});

/** True when live read holds were dropped. */
export async function forceReleaseReads(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
): Promise<boolean> {
  const reply = await runScript(
    ctx,
    READ_FORCE_RELEASE,
    {
      readsKey: keys.reads,
      readersKey: keys.readers,
      operationKey: keys.operation(newOperationId()),
    },
    { operationTtlMs: ctx.operationTtlMs },
  );
  return reply[0] === 1;
}

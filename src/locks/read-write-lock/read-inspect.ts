/**
 * Read the read side in one read-only request: live read holds (of one owner, or of all), and
 * how long until the last one surely ends. Expired holds not yet pruned are not counted.
 */
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { OperationContext } from "../context.js";
import type { ReadWriteLockKeys } from "../keys.js";
import type { LockState } from "../lock/inspect.js";
import { SERVER_NOW_MS } from "../lua.js";
import { checkedReply } from "../reply.js";

// KEYS: 1 reads, 2 readers. ARGV: 1 owner, or '' for all readers
// Reply: {locked 0/1, ms until the last hold ends (-2 none), holds}
export const READ_INSPECT = new Script(
  "readWriteLock.inspectRead",
  `${SERVER_NOW_MS}
local live = redis.call('ZCOUNT', KEYS[1], now + 1, '+inf')
if live == 0 then return {0, -2, 0} end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local holds = live
if ARGV[1] ~= '' then
  holds = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
  local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
  for i = 1, #expired do
    if string.sub(expired[i], 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then holds = holds - 1 end
  end
end
return {1, tonumber(last[2]) - now, math.max(0, holds)}`,
);

export async function inspectReads(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
  owner: string | undefined,
): Promise<LockState> {
  const raw = await callScript(
    ctx.redis,
    READ_INSPECT,
    [keys.reads, keys.readers],
    [owner ?? ""],
    ctx.retry,
    ctx.observer,
  );
  const [locked, ttl, holds] = checkedReply(raw, READ_INSPECT.name, { 1: [3], 0: [3] });
  return {
    locked: locked === 1,
    ttlMs: locked === 1 ? (ttl ?? null) : null,
    holds: holds ?? 0,
  };
}

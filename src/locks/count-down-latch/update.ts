/**
 * The latch's two changes, each exactly-once under re-sends (an operation record): setting the
 * count when it is 0 or unset, and counting down by one (deleting the key at 0).
 */
import type { OperationContext } from "../../hold/context.js";
import { defineScript, runScript } from "../../hold/script.js";
import type { LatchKeys } from "./keys.js";

// KEYS: 1 count, 2 operation record. ARGV: 1 count to set, 2 its ttl ms, 3 operation ttl ms
// Reply: {1} set; {0} a count above 0 was already set (left alone). A re-send replays.
export const LATCH_SET_COUNT = defineScript({
  name: "countDownLatch.trySetCount",
  keys: ["countKey", "operationKey"],
  args: ["count", "ttlMs", "operationTtlMs"],
  replies: { 1: [1], 0: [1] },
  lua: `local replay = redis.call('GET', operationKey)
if replay then return {tonumber(replay)} end
local set = 0
if tonumber(redis.call('GET', countKey) or '0') <= 0 then
  redis.call('SET', countKey, count, 'PX', ttlMs)
  set = 1
end
redis.call('SET', operationKey, set, 'PX', operationTtlMs)
return {set}`,
});

// KEYS: 1 count, 2 operation record, 3 the opened channel. ARGV: 1 operation ttl ms
// Reply: {1, count left}. At 0 the key is deleted and `opened` published (awaits in push mode
// listen); counting down an open latch does nothing. DECR without a GET first (one billed command
// less): below 0 the latch was open (the key gone, or 0), and the key DECR made is deleted.
export const LATCH_COUNT_DOWN = defineScript({
  name: "countDownLatch.countDown",
  keys: ["countKey", "operationKey", "openedChannel"],
  args: ["operationTtlMs"],
  replies: { 1: [2] },
  lua: `local replay = redis.call('GET', operationKey)
if replay then return {1, tonumber(replay)} end
local left = redis.call('DECR', countKey)
if left <= 0 then
  redis.call('DEL', countKey)
  if left == 0 then redis.call('PUBLISH', openedChannel, 'opened') end
  left = 0
end
redis.call('SET', operationKey, left, 'PX', operationTtlMs)
return {1, left}`,
});

export async function trySetLatchCount(
  ctx: OperationContext,
  keys: LatchKeys,
  count: number,
  ttlMs: number,
  operationId: string,
): Promise<boolean> {
  const [set] = await runScript(
    ctx,
    LATCH_SET_COUNT,
    { countKey: keys.count, operationKey: keys.operation(operationId) },
    { count, ttlMs, operationTtlMs: ctx.operationTtlMs },
  );
  return set === 1;
}

export async function countLatchDown(
  ctx: OperationContext,
  keys: LatchKeys,
  operationId: string,
): Promise<number> {
  const [, left] = await runScript(
    ctx,
    LATCH_COUNT_DOWN,
    { countKey: keys.count, operationKey: keys.operation(operationId), openedChannel: keys.opened },
    { operationTtlMs: ctx.operationTtlMs },
  );
  return left ?? 0;
}

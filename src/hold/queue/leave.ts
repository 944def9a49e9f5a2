/**
 * A waiter that gives up (timeout, abort, poll budget) leaves the queue before returning, so the
 * waiters behind it move up at once instead of after the waiter timeout. It removes only its
 * own place (its acquisition's, see queue/lua.ts): another task of the same owner waiting at
 * once keeps its place and its parked registration. And it closes its operation: a copy of one
 * of its attempts that reaches Redis later (re-sent by the Redis client after edgelock gave up
 * on it) finds the record `left` and takes nothing; a hold such a copy (or a hand-off) took
 * before is reported, to be released. Removing a member twice is harmless; a hand-off announced
 * by word, whose record the leave takes, stays in the operation record (`left <fence>`), so a
 * re-sent leave still reports it. A waiter parked on a pop has that pop ended (`none` on its wake
 * list): the client stopped waiting for it, and it would stay open at the server, holding its
 * connection, for the rest of the park.
 */

import { withoutKeyLocking } from "../../transport/call.js";
import type { OperationContext } from "../context.js";
import { fenceStillAt } from "../lua.js";
import type { LockKeys } from "../script.js";
import { defineScript, runScript } from "../script.js";

// KEYS: the sorted sets of waiters to leave (queue and timeouts, or a lock's waiting writers);
//       the parked waiters, the lock hash, its fence counter and the acquisition's operation
//       record, and for a writer its registration as a waiting writer
// ARGV: 1 owner, 2 the acquisition's operation id (with the owner, its queue member), 3 the
//       operation record's ttl ms
// Reply: {1} was waiting; {0} was not; {2, token} it holds the lock by this operation (a
//        hand-off, or a late copy of an attempt) with that fencing token, still the owner's
//        current hold; else the record now says `left` (`left <fence>` when it took the record
//        of a grant: a re-sent leave reports that hold again).
export const LEAVE_QUEUE = defineScript({
  name: "queue.leave",
  keys: [
    "waitersKey",
    "deadlinesKey",
    "parkedKey",
    "lockKey",
    "fenceKey",
    "operationKey",
    "writersKey",
  ],
  optionalKeys: ["deadlinesKey", "parkedKey", "lockKey", "fenceKey", "operationKey", "writersKey"],
  args: ["owner", "waiterId", "operationTtlMs"],
  replies: { 1: [1], 0: [1], 2: [2] },
  lua: `local waiter = owner .. ' ' .. waiterId
local removed = redis.call('ZREM', waitersKey, waiter)
if deadlinesKey then removed = removed + redis.call('ZREM', deadlinesKey, waiter) end
if writersKey then removed = removed + redis.call('ZREM', writersKey, waiter) end
local granted
if parkedKey then
  local registration = redis.call('HGET', parkedKey, waiter) or ''
  -- A hand-off announced on the lock's channel, whose word this waiter has not acted on.
  granted = string.match(registration, '^granted (%d+) ')
  redis.call('HDEL', parkedKey, waiter)
  ${withoutKeyLocking(`if string.match(registration, '^%d+ %d+ %S+ %d+ %d+$') then
    -- Ends the pop its client gave up on but could not cancel.
    redis.call('RPUSH', lockKey .. ':wake:' .. waiterId, 'none')
    redis.call('PEXPIRE', lockKey .. ':wake:' .. waiterId, 2000)
  end`)}
end
if operationKey then
  local recorded = redis.call('GET', operationKey)
  -- 'left <fence>': an earlier copy of this leave took a grant's record; its answer may be lost.
  local taken = string.match(recorded or '', '^left (%d+)$') or recorded or granted
  if not recorded then
    redis.call('SET', operationKey, granted and ('left ' .. granted) or 'left', 'PX', operationTtlMs)
  end
  if tonumber(taken) and redis.call('HEXISTS', lockKey, owner) == 1
      and ${fenceStillAt("fenceKey", "tonumber(taken)")} then
    return {2, tonumber(taken)}
  end
end
if removed > 0 then return {1} end
return {0}`,
});

/** What leaving found: the waiter was queued, was not, or had just been handed the lock. */
export type LeftQueue =
  | { readonly kind: "left" | "notWaiting" }
  | { readonly kind: "handedOff"; readonly fencingToken: number };

/**
 * Removes the acquisition `waiterId` of `owner` from the sorted sets `waiterKeys` (and, for a
 * parked waiter, from the parked waiters, reporting a hand-off that reached it first).
 */
export async function leaveQueue(
  ctx: OperationContext,
  waiterKeys: string[],
  owner: string,
  waiterId: string,
  parked?: {
    parkedKey: string;
    lockKey: string;
    fenceKey: string;
    operationKey: string;
    writersKey?: string;
  },
): Promise<LeftQueue> {
  const reply = await runScript(
    ctx,
    LEAVE_QUEUE,
    {
      waitersKey: waiterKeys[0],
      deadlinesKey: waiterKeys[1],
      parkedKey: parked?.parkedKey,
      lockKey: parked?.lockKey,
      fenceKey: parked?.fenceKey,
      operationKey: parked?.operationKey,
      writersKey: parked?.writersKey,
    },
    { owner, waiterId, operationTtlMs: ctx.operationTtlMs },
  );
  if (reply[0] === 2) return { kind: "handedOff", fencingToken: reply[1] ?? 0 };
  return { kind: reply[0] === 1 ? "left" : "notWaiting" };
}

/**
 * Leaves the wait of acquisition `operationId`: out of the queue of `keys` (and its parked
 * registration, and for a writer its place among the waiting writers: `writersKey`), and closes
 * the operation. A hold it took meanwhile (a hand-off, a late copy of an attempt) is released at
 * once by `passOn` (that hold, by its fencing token), so the lock goes to the next waiter.
 */
export async function leaveParkedQueue(
  ctx: OperationContext,
  keys: LockKeys,
  owner: string,
  operationId: string,
  passOn: (fencingToken: number) => Promise<unknown>,
  writersKey?: string,
): Promise<void> {
  const left = await leaveQueue(ctx, [keys.queue, keys.timeouts], owner, operationId, {
    parkedKey: keys.parked,
    lockKey: keys.lock,
    fenceKey: keys.fence,
    operationKey: keys.operation(operationId),
    ...(writersKey === undefined ? {} : { writersKey }),
  });
  if (left.kind === "handedOff") await passOn(left.fencingToken);
}

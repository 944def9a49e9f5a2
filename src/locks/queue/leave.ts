/**
 * A waiter that gives up (timeout, abort, poll budget) leaves the queue before returning, so the
 * waiters behind it move up at once instead of after the waiter timeout. Removing a member twice
 * is harmless, so a re-send needs no operation id.
 */

import type { OperationContext } from "../context.js";
import type { LockKeys } from "../keys.js";
import { defineScript, runScript } from "../script.js";

// KEYS: the sorted sets of waiters to leave (queue and timeouts, or a lock's waiting writers);
//       push mode adds the parked waiters, the lock hash and the acquisition's operation record,
//       and for a parked writer its registration as a waiting writer
// ARGV: 1 owner. Reply: {1} was waiting; {0} was not; {2} a hand-off made it the holder before
// it left (its operation record names it, and it holds the lock).
export const LEAVE_QUEUE = defineScript({
  name: "queue.leave",
  keys: ["waitersKey", "deadlinesKey", "parkedKey", "lockKey", "operationKey", "writersKey"],
  optionalKeys: ["deadlinesKey", "parkedKey", "lockKey", "operationKey", "writersKey"],
  args: ["owner"],
  replies: { 1: [1], 0: [1], 2: [1] },
  lua: `local removed = redis.call('ZREM', waitersKey, owner)
if deadlinesKey then removed = removed + redis.call('ZREM', deadlinesKey, owner) end
if writersKey then removed = removed + redis.call('ZREM', writersKey, owner) end
if parkedKey then
  redis.call('HDEL', parkedKey, owner)
  if redis.call('EXISTS', operationKey) == 1 and redis.call('HEXISTS', lockKey, owner) == 1 then
    return {2}
  end
end
if removed > 0 then return {1} end
return {0}`,
});

/** What leaving found: the waiter was queued, was not, or had just been handed the lock. */
export type LeftQueue = "left" | "notWaiting" | "handedOff";

/**
 * Removes `owner` from the sorted sets `waiterKeys` (and, for a parked waiter, from the parked
 * waiters, reporting a hand-off that reached it first).
 */
export async function leaveQueue(
  ctx: OperationContext,
  waiterKeys: string[],
  owner: string,
  parked?: { parkedKey: string; lockKey: string; operationKey: string; writersKey?: string },
): Promise<LeftQueue> {
  const reply = await runScript(
    ctx,
    LEAVE_QUEUE,
    {
      waitersKey: waiterKeys[0],
      deadlinesKey: waiterKeys[1],
      parkedKey: parked?.parkedKey,
      lockKey: parked?.lockKey,
      operationKey: parked?.operationKey,
      writersKey: parked?.writersKey,
    },
    { owner },
  );
  return reply[0] === 2 ? "handedOff" : reply[0] === 1 ? "left" : "notWaiting";
}

/**
 * Leaves as a waiter that may be parked (push mode): out of the queue of `keys` (and, for a
 * writer, out of the waiting writers: `writersKey`). A hand-off that made it the holder first is
 * released at once by `passOn`, so the lock goes to the next waiter.
 */
export async function leaveParkedQueue(
  ctx: OperationContext,
  keys: LockKeys,
  owner: string,
  operationId: string,
  passOn: () => Promise<unknown>,
  writersKey?: string,
): Promise<void> {
  const left = await leaveQueue(ctx, [keys.queue, keys.timeouts], owner, {
    parkedKey: keys.parked,
    lockKey: keys.lock,
    operationKey: keys.operation(operationId),
    ...(writersKey === undefined ? {} : { writersKey }),
  });
  if (left === "handedOff") await passOn();
}

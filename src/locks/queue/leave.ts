/**
 * A waiter that gives up (timeout, abort, poll budget) leaves the queue before returning, so the
 * waiters behind it move up at once instead of after the waiter timeout. Removing a member twice
 * is harmless, so a re-send needs no operation id.
 */

import type { OperationContext } from "../context.js";
import { YES_OR_NO } from "../reply.js";
import { defineScript, runScript } from "../script.js";

// KEYS: the sorted sets of waiters to leave (queue and timeouts, or a lock's waiting writers)
// ARGV: 1 owner. Reply: {1} was waiting; {0} was not.
export const LEAVE_QUEUE = defineScript({
  name: "queue.leave",
  keys: ["waitersKey", "deadlinesKey"],
  optionalKeys: ["deadlinesKey"],
  args: ["owner"],
  replies: YES_OR_NO,
  lua: `local removed = redis.call('ZREM', waitersKey, owner)
if deadlinesKey then removed = removed + redis.call('ZREM', deadlinesKey, owner) end
if removed > 0 then return {1} end
return {0}`,
});

/** Removes `owner` from the sorted sets `waiterKeys`; true when it was waiting. */
export async function leaveQueue(
  ctx: OperationContext,
  waiterKeys: string[],
  owner: string,
): Promise<boolean> {
  const reply = await runScript(
    ctx,
    LEAVE_QUEUE,
    { waitersKey: waiterKeys[0], deadlinesKey: waiterKeys[1] },
    { owner },
  );
  return reply[0] === 1;
}

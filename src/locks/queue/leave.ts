/**
 * A waiter that gives up (timeout, abort, poll budget) leaves the queue before returning, so the
 * waiters behind it move up at once instead of after the waiter timeout. Removing a member twice
 * is harmless, so a re-send needs no operation id.
 */
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { OperationContext } from "../context.js";
import { checkedReply, YES_OR_NO } from "../reply.js";

// KEYS: the sorted sets of waiters to leave (queue and timeouts, or a lock's waiting writers)
// ARGV: 1 owner. Reply: {1} was waiting; {0} was not.
export const LEAVE_QUEUE = new Script(
  "queue.leave",
  `local removed = 0
for i = 1, #KEYS do removed = removed + redis.call('ZREM', KEYS[i], ARGV[1]) end
if removed > 0 then return {1} end
return {0}`,
);

/** Removes `owner` from the sorted sets `waiterKeys`; true when it was waiting. */
export async function leaveQueue(
  ctx: OperationContext,
  waiterKeys: string[],
  owner: string,
): Promise<boolean> {
  const raw = await callScript(
    ctx.redis,
    LEAVE_QUEUE,
    waiterKeys,
    [owner],
    ctx.retry,
    ctx.observer,
  );
  return checkedReply(raw, LEAVE_QUEUE.name, YES_OR_NO)[0] === 1;
}

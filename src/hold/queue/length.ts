/** How many waiters are queued and alive (deadline not passed), in one read-only request. */
import type { OperationContext } from "../context.js";
import { SERVER_NOW_MS } from "../lua.js";
import { defineScript, runScript } from "../script.js";

// Reply: {live waiters}
export const QUEUE_LENGTH = defineScript({
  name: "queue.length",
  keys: ["timeoutsKey"],
  args: [],
  replies: "count",
  lua: `${SERVER_NOW_MS}
return {redis.call('ZCOUNT', timeoutsKey, now + 1, '+inf')}`,
});

export async function queueLength(ctx: OperationContext, timeoutsKey: string): Promise<number> {
  const [count] = await runScript(ctx, QUEUE_LENGTH, { timeoutsKey }, {});
  return count ?? 0;
}

/** How many waiters are queued and alive (deadline not passed), in one read-only request. */
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { OperationContext } from "../context.js";
import { SERVER_NOW_MS } from "../lua.js";
import { integerReply } from "../reply.js";

// KEYS: 1 timeouts (owner -> deadline). Reply: {live waiters}
export const QUEUE_LENGTH = new Script(
  "queue.length",
  `${SERVER_NOW_MS}
return {redis.call('ZCOUNT', KEYS[1], now + 1, '+inf')}`,
);

export async function queueLength(ctx: OperationContext, timeoutsKey: string): Promise<number> {
  const raw = await callScript(ctx.redis, QUEUE_LENGTH, [timeoutsKey], [], ctx.retry, ctx.observer);
  return integerReply(raw, QUEUE_LENGTH.name)[0] ?? 0;
}

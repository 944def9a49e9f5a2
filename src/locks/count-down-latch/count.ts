/** Reads the latch's count and how long until it expires, in one request. */
import type { OperationContext } from "../../hold/context.js";
import { defineScript, runScript, ttlOrNull } from "../../hold/script.js";
import type { LatchKeys } from "./keys.js";

// KEYS: 1 count. Reply: {count (0: open or unset), pttl (-2: no latch)}.
export const LATCH_COUNT = defineScript({
  name: "countDownLatch.count",
  keys: ["countKey"],
  args: [],
  replies: "count",
  lua: `return {tonumber(redis.call('GET', countKey) or '0'), redis.call('PTTL', countKey)}`,
});

export async function readLatch(
  ctx: OperationContext,
  keys: LatchKeys,
): Promise<{ count: number; ttlMs: number | null }> {
  const [count = 0, pttl] = await runScript(ctx, LATCH_COUNT, { countKey: keys.count }, {});
  return { count, ttlMs: ttlOrNull(pttl) };
}

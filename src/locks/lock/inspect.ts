/** Read the lock's state in one request: held or not, remaining lease, an owner's holds. */
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import type { OperationContext } from "../context.js";
import type { LockKeys } from "../keys.js";
import { checkedReply, ttlOrNull } from "../reply.js";

// KEYS: 1 lock hash. ARGV: 1 owner, or '' for whoever holds it
// Reply: {locked 0/1, pttl, holds}
export const INSPECT = new Script(
  "lock.inspect",
  `if redis.call('EXISTS', KEYS[1]) == 0 then return {0, -2, 0} end
local holds = 0
if ARGV[1] == '' then
  local counts = redis.call('HVALS', KEYS[1])
  for i = 1, #counts do holds = holds + tonumber(counts[i]) end
else
  holds = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
end
return {1, redis.call('PTTL', KEYS[1]), holds}`,
);

export interface LockState {
  locked: boolean;
  /** Remaining lease in ms; null when not locked (or the key has no expiry). */
  ttlMs: number | null;
  /** Holds of the owner asked about, or of the current holder when none was named. */
  holds: number;
}

export async function inspectLock(
  ctx: OperationContext,
  keys: LockKeys,
  owner: string | undefined,
): Promise<LockState> {
  const raw = await callScript(
    ctx.redis,
    INSPECT,
    [keys.lock],
    [owner ?? ""],
    ctx.retry,
    ctx.observer,
  );
  const [locked, pttl, holds] = checkedReply(raw, INSPECT.name, { 1: [3], 0: [3] });
  return { locked: locked === 1, ttlMs: locked === 1 ? ttlOrNull(pttl) : null, holds: holds ?? 0 };
}

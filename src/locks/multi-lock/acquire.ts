/**
 * All-or-nothing acquisition of the members on one Redis in one script call: no partial hold is
 * ever visible and no lock ordering is needed. Each member is a reentrant lock with its own
 * fencing token; all end together (ALIGN_ENDS_LUA).
 */

import { fenceStillAt } from "../../hold/lua.js";
import { checkedReply, ttlOrNull } from "../../hold/script.js";
import { callScript, Script } from "../../transport/call.js";
import type { MemberGroup } from "./members.js";
import { ALIGN_ENDS_LUA, groupRecord, lockAndFenceKeys } from "./members.js";
import { UNDO_HOLDS_LUA } from "./rollback.js";

// KEYS: lock hash and fence counter of each member (2n keys), then the operation record: a hash
//       with 's' (1 acquired, 0 or -1 rolled back) and each member's fencing token by position
// ARGV: 1 owner, 2 lease ms, 3 record ttl ms
// Reply: {1, token_1, ..., token_n} all held;
//        {0, i, pttl} member i is busy: nothing taken (recorded, for a late copy);
//        {-1} a re-send whose first run acquired, but a hold it took is gone (or is a later
//        one) since: the rest is undone;
//        {-2} rolled back before it ran: nothing taken.
export const MULTI_ACQUIRE = new Script(
  "multiLock.acquire",
  `${UNDO_HOLDS_LUA}${ALIGN_ENDS_LUA}local n = math.floor((#KEYS - 1) / 2)
local record = KEYS[#KEYS]
local owner = ARGV[1]
local state = redis.call('HGET', record, 's')
if state then
  if tonumber(state) ~= 1 then return {-2} end
  local replay = {1}
  for i = 1, n do
    local token = tonumber(redis.call('HGET', record, i))
    if redis.call('HEXISTS', KEYS[2 * i - 1], owner) == 0
        or not (${fenceStillAt("KEYS[2 * i]", "token")}) then
      undoHolds(owner, n, record)
      redis.call('HSET', record, 's', -1)
      return {-1}
    end
    replay[i + 1] = tonumber(redis.call('HGET', record, i))
  end
  return replay
end
for i = 1, n do
  local lock = KEYS[2 * i - 1]
  if redis.call('EXISTS', lock) == 1 and redis.call('HEXISTS', lock, owner) == 0 then
    -- Busy: the operation is over, having taken nothing. A copy of this request that the Redis
    -- client re-sends later (after a later attempt acquired, or the wait ended) takes nothing.
    redis.call('HSET', record, 's', 0)
    redis.call('PEXPIRE', record, ARGV[3])
    return {0, i, redis.call('PTTL', lock)}
  end
end
local reply = {1}
for i = 1, n do
  local lock = KEYS[2 * i - 1]
  local fence
  if redis.call('HINCRBY', lock, owner, 1) == 1 then
    fence = redis.call('INCR', KEYS[2 * i])
  else
    fence = tonumber(redis.call('GET', KEYS[2 * i]) or '0')
  end
  redis.call('HSET', record, i, fence)
  reply[i + 1] = fence
end
alignEnds(n, 2, tonumber(ARGV[2]))
redis.call('HSET', record, 's', 1)
redis.call('PEXPIRE', record, ARGV[3])
return reply`,
);

export type GroupAcquisition =
  | { readonly kind: "acquired"; readonly fencingTokens: readonly number[] }
  | {
      readonly kind: "busy";
      /** Null when the hold vanished after a re-send. */
      readonly blockedBy: string | null;
      readonly holderTtlMs: number | null;
    };

/** Every member of `group` or none; `operationId` names it for rollback. */
export async function acquireGroup(
  group: MemberGroup,
  owner: string,
  leaseMs: number,
  operationId: string,
): Promise<GroupAcquisition> {
  const { ctx } = group;
  const raw = await callScript(
    ctx.redis,
    MULTI_ACQUIRE,
    lockAndFenceKeys(group, groupRecord(group, operationId)),
    [owner, String(leaseMs), String(ctx.operationTtlMs)],
    ctx.retry,
    ctx.observer,
  );
  const [status, ...rest] = checkedReply(raw, MULTI_ACQUIRE.name, {
    1: "any",
    0: [3],
    [-1]: [1],
    [-2]: [1],
  });
  if (status === 1 && rest.length === group.members.length) {
    return { kind: "acquired", fencingTokens: rest };
  }
  if (status === 0) {
    const [position = 0, pttl] = rest;
    return {
      kind: "busy",
      blockedBy: group.members[position - 1]?.name ?? null,
      holderTtlMs: ttlOrNull(pttl),
    };
  }
  // -1 / -2: nothing of this operation is held.
  return { kind: "busy", blockedBy: null, holderTtlMs: null };
}

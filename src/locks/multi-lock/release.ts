/** Release one hold of an owner on every member of a group, in one script call. */

import { integerReply } from "../../hold/script.js";
import { callScript, Script } from "../../transport/call.js";
import type { MemberGroup } from "./members.js";
import { groupRecord, HOLDS_IT_LUA, lockAndFenceKeys, memberTokens } from "./members.js";

// KEYS: lock hash and fence counter of each member, then the operation record (a hash: holds
//       left by position)
// ARGV: 1 owner, 2 record ttl ms, then each member's fencing token (see HOLDS_IT_LUA)
// Reply: {left_1, ..., left_n}: the owner's holds left on each member, -1 where it held none.
// A re-send replays the recorded reply instead of releasing twice.
export const MULTI_RELEASE = new Script(
  "multiLock.release",
  `${HOLDS_IT_LUA}local n = math.floor((#KEYS - 1) / 2)
local record = KEYS[#KEYS]
local reply = {}
if redis.call('EXISTS', record) == 1 then
  for i = 1, n do reply[i] = tonumber(redis.call('HGET', record, i)) end
  return reply
end
for i = 1, n do
  local lock = KEYS[2 * i - 1]
  local left = -1
  if holdsIt(i, tonumber(ARGV[2 + i])) then
    left = redis.call('HINCRBY', lock, ARGV[1], -1)
    if left <= 0 then
      redis.call('HDEL', lock, ARGV[1])
      left = 0
    end
  end
  redis.call('HSET', record, i, left)
  reply[i] = left
end
redis.call('PEXPIRE', record, ARGV[2])
return reply`,
);

/** The members the owner no longer held. */
export async function releaseGroup(
  group: MemberGroup,
  owner: string,
  operationId: string,
  /** The handle's token of each member (by its index in the MultiLock); none: any hold. */
  tokens?: readonly number[],
): Promise<string[]> {
  const { ctx } = group;
  const raw = await callScript(
    ctx.redis,
    MULTI_RELEASE,
    lockAndFenceKeys(group, groupRecord(group, operationId)),
    [owner, String(ctx.operationTtlMs), ...memberTokens(group, tokens)],
    ctx.retry,
    ctx.observer,
  );
  const left = integerReply(raw, MULTI_RELEASE.name);
  return group.members.filter((_, i) => (left[i] ?? -1) < 0).map((member) => member.name);
}

/**
 * Undo one group acquisition exactly, by operation id, after a miss or an unknown outcome: if it
 * ran, its holds are released once; if not, a tombstone makes a late copy take nothing.
 */

import { fenceStillAt } from "../../hold/lua.js";
import { callScript, Script } from "../../transport/call.js";
import type { MemberGroup } from "./members.js";
import { groupRecord, lockAndFenceKeys } from "./members.js";

/**
 * Drops the hold `record` took of `owner` on each of `n` members (KEYS 1, 3, 5…). A member whose
 * fence moved past the recorded token is left alone: the owner's hold there is a later one.
 */
export const UNDO_HOLDS_LUA = `local function undoHolds(owner, n, record)
  for i = 1, n do
    local lock = KEYS[2 * i - 1]
    local token = tonumber(redis.call('HGET', record, i) or '-1')
    if redis.call('HEXISTS', lock, owner) == 1
        and ${fenceStillAt("KEYS[2 * i]", "token")}
        and redis.call('HINCRBY', lock, owner, -1) <= 0 then
      redis.call('HDEL', lock, owner)
    end
  end
end
`;

// KEYS: lock hash and fence counter of each member, then the acquisition's record (a hash whose
//       field 's' is 1 acquired, 0 rolled back before it ran, -1 rolled back after it ran)
// ARGV: 1 owner, 2 record ttl ms
// Reply: {1} the acquisition's holds are undone (now or by an earlier send); {0} it took none.
export const MULTI_ROLLBACK = new Script(
  "multiLock.rollback",
  `${UNDO_HOLDS_LUA}local n = math.floor((#KEYS - 1) / 2)
local record = KEYS[#KEYS]
local state = redis.call('HGET', record, 's')
if not state then
  redis.call('HSET', record, 's', 0)
  redis.call('PEXPIRE', record, ARGV[2])
  return {0}
end
state = tonumber(state)
if state == 1 then
  undoHolds(ARGV[1], n, record)
  redis.call('HSET', record, 's', -1)
  return {1}
end
if state == -1 then return {1} end
return {0}`,
);

/** Safe whatever the acquisition's outcome. */
export async function rollbackGroup(
  group: MemberGroup,
  owner: string,
  operationId: string,
): Promise<void> {
  const { ctx } = group;
  await callScript(
    ctx.redis,
    MULTI_ROLLBACK,
    lockAndFenceKeys(group, groupRecord(group, operationId)),
    [owner, String(ctx.operationTtlMs)],
    ctx.retry,
    ctx.observer,
  );
}

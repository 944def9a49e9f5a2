/**
 * Re-arm an owner's lease on every member of a group, only if it holds them all. A re-send is
 * harmless, so no operation id. Ends only grow, and all members get one (ALIGN_ENDS_LUA).
 */

import { checkedReply } from "../../hold/script.js";
import { callScript, Script } from "../../transport/call.js";
import { ALIGN_ENDS_LUA, HOLDS_IT_LUA, type MemberGroup, memberTokens } from "./members.js";

// KEYS: lock hash and fence counter of each member. ARGV: 1 owner, 2 lease ms, then each
//       member's fencing token (see HOLDS_IT_LUA)
// Reply: {1} all re-armed; {0, i} member i is not held by the owner (with that hold): nothing
//        was re-armed.
export const MULTI_EXTEND = new Script(
  "multiLock.extend",
  `${ALIGN_ENDS_LUA}${HOLDS_IT_LUA}local n = #KEYS / 2
for i = 1, n do
  if not holdsIt(i, tonumber(ARGV[2 + i])) then return {0, i} end
end
alignEnds(n, 2, tonumber(ARGV[2]))
return {1}`,
);

/** False when the owner no longer holds one of them. */
export async function extendGroup(
  group: MemberGroup,
  owner: string,
  leaseMs: number,
  /** By member index; none: any hold. */
  tokens?: readonly number[],
): Promise<boolean> {
  const { ctx } = group;
  const raw = await callScript(
    ctx.redis,
    MULTI_EXTEND,
    group.members.flatMap((member) => [member.keys.lock, member.keys.fence]),
    [owner, String(leaseMs), ...memberTokens(group, tokens)],
    ctx.retry,
    ctx.observer,
  );
  return checkedReply(raw, MULTI_EXTEND.name, { 1: [1], 0: [2] })[0] === 1;
}

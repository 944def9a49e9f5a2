/**
 * Re-arm an owner's lease on every member of a group, only if it still holds them all. Used by
 * `extend()` and the watchdog; re-sending it is harmless, so it carries no operation id. A TTL
 * only grows, and every member gets the same end: the later of the new lease and the latest end
 * any member carries (other holds of the owner on a member may have been promised it).
 */
import { callScript } from "../../transport/call.js";
import { Script } from "../../transport/script.js";
import { checkedReply } from "../reply.js";
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

/** True when every member was re-armed, false when the owner no longer holds one of them. */
export async function extendGroup(
  group: MemberGroup,
  owner: string,
  leaseMs: number,
  /** The handle's token of each member (by its index in the MultiLock); none: any hold. */
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

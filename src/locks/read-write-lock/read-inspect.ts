/**
 * Read the read side in one read-only request: live read holds (of one owner, or of all), and
 * how long until the last one surely ends. Expired holds not yet pruned are not counted.
 */

import type { OperationContext } from "../../hold/context.js";
import { SERVER_NOW_MS } from "../../hold/lua.js";
import type { ReadWriteLockKeys } from "../../hold/script.js";
import { defineScript, runScript } from "../../hold/script.js";
import type { LockState } from "../../hold/state.js";
import { ownerReadHolds } from "./lua.js";

// KEYS: 1 reads. ARGV: 1 owner, or '' for all readers
// Reply: {locked 0/1, ms until the last hold ends (-2 none), holds}
export const READ_INSPECT = defineScript({
  name: "readWriteLock.inspectRead",
  keys: ["readsKey"],
  args: ["owner"],
  replies: { 1: [3], 0: [3] },
  lua: `${SERVER_NOW_MS}
local live = redis.call('ZCOUNT', readsKey, now + 1, '+inf')
if live == 0 then return {0, -2, 0} end
local last = redis.call('ZRANGE', readsKey, -1, -1, 'WITHSCORES')
local holds = live
if owner ~= '' then
  ${ownerReadHolds("readsKey", "owner", true)}
  holds = ownerReads
end
return {1, tonumber(last[2]) - now, holds}`,
});

export async function inspectReads(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
  owner: string | undefined,
): Promise<LockState> {
  const reply = await runScript(
    ctx,
    READ_INSPECT,
    { readsKey: keys.reads },
    { owner: owner ?? "" },
  );
  const [locked, ttl, holds] = reply;
  return {
    locked: locked === 1,
    ttlMs: locked === 1 ? (ttl ?? null) : null,
    holds: holds ?? 0,
  };
}

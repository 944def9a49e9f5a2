/**
 * Push hand-off (`wait.mode: "push"`): Lua fragments of the parked waiters. A waiter that must
 * wait registers as parked beside its place in the queue (the acquire script) and blocks on a
 * wake list of its own (src/wait/acquire.ts). The release that frees the lock hands it to
 * the head waiter inside the same script when that waiter is parked: the waiter becomes the
 * holder with a fresh fencing token, its acquisition's operation record says so (a re-sent or
 * repeated attempt replays it: exactly once), and the grant is pushed to its wake list, so its
 * blocking pop returns already holding the lock.
 */
import { withoutKeyLocking } from "../../transport/call.js";
import { LUA_FRAGMENTS } from "../fragment.js";
import { lengthenTtl } from "../lua.js";
import type { LockKeys } from "../script.js";
import { ownerOfWaiter, pruneDeadWaiters } from "./lua.js";

/**
 * Runs an acquire script's `body` (which may `return` anywhere) so that a park already in flight
 * beside the attempt (ARGV `parkBeside` 1: the waiter sent its blocking pop with the attempt, as
 * it does where it recently had to wait) never blocks for nothing: unless the body registered the
 * waiter as parked (`registerParked` sets `parkedNow`), `none` is pushed to its wake list, so that
 * the pop returns at once (a lost answer to it costs nothing: the attempt's reply goes on
 * without the park). The wake list is the one the hand-off pushes to (see LockKeys.wake). Where
 * scripts carry Upstash's key-locking flag no waiter parks, and this part is cut out.
 */
export function endingParkBeside(body: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "endingParkBeside",
    lua: () => endingParkBeside(body),
    needs: ["parkBeside", "lockKey", "parkId", "claimMs"],
  });
  return `local parkedNow = false
local function attempt()
${body}
end
local reply = attempt()
${withoutKeyLocking(`if parkBeside == '1' and not parkedNow then
  redis.call('RPUSH', lockKey .. ':wake:' .. parkId, 'none')
  -- Only the pop sent beside this attempt wants it, within moments; one that already took
  -- other word (of a hand-off ahead) leaves it, so it goes soon.
  redis.call('PEXPIRE', lockKey .. ':wake:' .. parkId, math.max(2000, tonumber(claimMs)))
end`)}
return reply`;
}

/** A park at the head ends this long after the holder's lease would (ms): then it is free. */
export const PARK_PAST_LEASE_MS = 25;

/**
 * Share of a grant's lease that a waiter which must keep its turn (a fair lock's or a
 * semaphore's, woken over a subscription) parks at most: a grant whose word was lost still holds
 * when the waiter asks again (the rest lets that request arrive), so its attempt replays the grant
 * instead of finding it lapsed and queueing anew behind the waiters it was ahead of.
 */
export const GRANT_PARK_SHARE = 0.75;

/**
 * The longest park of a waiter that keeps its turn: a grant lasts the claim window, or the
 * waiter's own lease when that is shorter.
 */
export function grantKeepingParkMs(claimMs: number, leaseMs: number): number {
  return Math.floor(GRANT_PARK_SHARE * Math.min(claimMs, leaseMs));
}

/**
 * A hand-off tells the parked waiter behind the new holder when that holder's claim window ends
 * if its own park would otherwise end more than this much later (ms): a grant to a waiter that
 * died while parked then passes on about one claim window after the release.
 */
export const BEHIND_NOTICE_MS = 250;

/**
 * A Lua expression: when the park of a waiter registering now ends at the latest (server ms),
 * by the rule the client bounds it with (parkBoundMs in src/wait/push/parking.ts, which this mirrors;
 * capped by the waiter's place, `timeout`, a local of the caller's, as are `pttl` and `position`),
 * from the lock's statistics as readPace read them (`pace`, pace.ts).
 */
function parkEndLua(): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "parkEndLua",
    lua: () => parkEndLua(),
    needs: ["now", "pttl", "position", "claimMs", "timeout", "pace"],
  });
  return `(function()
  local bound = timeout
  local claim = tonumber(claimMs)
  if pttl >= 0 then bound = math.min(bound, pttl + position * claim + ${PARK_PAST_LEASE_MS}) end
  if position >= 1 and pace[2] then
    local hold = tonumber(pace[2])
    local current = 0
    if pttl ~= -2 then
      local heldFor = 0
      if pace[1] then heldFor = math.max(0, now - tonumber(pace[1])) end
      current = math.max(0, hold - heldFor)
    end
    bound = math.min(bound, current + position * tonumber(pace[4] or pace[2]) + claim)
  end
  return now + math.floor(bound)
end)()`;
}

/**
 * A Lua expression for joinQueue's `likelyNew`: a waiter that parks (ARGV `claimMs` > 0, beside
 * `parkedKey`) registers at every busy attempt, so one without a registration (`registered`,
 * takeAnnouncedGrant) is most likely at its first attempt, with no place in the queue yet.
 */
export const PARKING_FIRST_ATTEMPT = "parkedKey and not registered and tonumber(claimMs) > 0";

/**
 * Registers `waiter` (this acquisition) as parked and sets the caller's `parkedNow`, or forgets
 * it (ARGV `claimMs` 0: a polling waiter) where it was `registered` (takeAnnouncedGrant). The
 * registration records when its park ends at the latest (see parkEndLua). `parkId` is the
 * acquisition's operation id.
 */
export function registerParked(parkedKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "registerParked",
    lua: () => registerParked(parkedKey),
    needs: [
      parkedKey,
      "claimMs",
      "parkedNow",
      "waiter",
      "leaseMs",
      "parkId",
      "now",
      "timeout",
      "wakeBy",
      "registered",
    ],
  });
  return `if tonumber(claimMs) > 0 then
  parkedNow = true
  local registration = claimMs .. ' ' .. leaseMs .. ' ' .. parkId .. ' ' .. now .. ' ' .. ${parkEndLua()}
  if string.sub(wakeBy, 1, 3) == 'sub' then registration = registration .. ' ' .. wakeBy end
  redis.call('HSET', ${parkedKey}, waiter, registration)
  ${lengthenTtl(parkedKey, "timeout", true)}
elseif registered then
  redis.call('HDEL', ${parkedKey}, waiter)
end`;
}

/**
 * When the waiter at the head of `queueKey` is parked and its park would end more than
 * BEHIND_NOTICE_MS after `lease` (a local, ms from now), tells it `behind <lease>` (its wake list,
 * or its channel), so that it parks again bounded by that lease:
 * - after a hand-off with that lease: if the new holder died while parked, its grant lapses
 *   unclaimed and this waiter takes the lock then, instead of when its own park ends (which may
 *   be a whole holder's lease later, after an early release);
 * - after a read release that moved the last read lease end earlier (a write lock's parked
 *   writer, whose park was bounded by the later end): it asks again just after the new end.
 * The word is of use only within that lease, and expires with it. `read` (Lua expressions): the
 * queue's head and its registration where the caller already read them.
 */
export function noticeBehind(
  queueKey: string,
  parkedKey: string,
  read?: { readonly head: string; readonly registration: string },
): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "noticeBehind",
    lua: () => noticeBehind(queueKey, parkedKey, read),
    needs: [
      read === undefined ? queueKey : undefined,
      read === undefined ? parkedKey : undefined,
      ...HAND_OFF_CHANNEL_KEYS,
      "now",
      "lockKey",
      "lease",
    ],
  });
  return `local behind = ${read?.head ?? `redis.call('ZRANGE', ${queueKey}, 0, 0)[1]`}
  local behindParked = behind and ${read?.registration ?? `redis.call('HGET', ${parkedKey}, behind)`}
  if behindParked then
    local behindId, parkEnd, behindWakeBy, behindShard =
      string.match(behindParked, '^%d+ %d+ (%S+) %d+ (%d+) ?(%a*)%d*%.?(%d*)$')
    if parkEnd and tonumber(parkEnd) > now + lease + ${BEHIND_NOTICE_MS} then
      if behindWakeBy == 'sub' then
        ${publishOnShard("behindShard", "behindId .. ' behind ' .. lease")}
      end
      ${withoutKeyLocking(`if behindWakeBy ~= 'sub' then
        redis.call('RPUSH', lockKey .. ':wake:' .. behindId, 'behind ' .. lease)
        redis.call('PEXPIRE', lockKey .. ':wake:' .. behindId, lease)
      end`)}
    end
  end`;
}

/**
 * After the lock was freed (a release, or a force release of the lock or of its read holds):
 * when the live head of the queue is parked, hands it the lock (see handOffToParkedHead);
 * declares the locals `handedOff` (false, or the fencing token of the hold handed over), `heads`
 * (the first two waiters, read before any hand-off; where none took place, reserveForHead
 * reserves the lock for them) and `registrations` (theirs in `parkedKey`). Dead waiters are
 * pruned when the head is one (issue 42: not at every release): the head is then live, the one
 * behind it may not be, which costs a reservation's second name or a word nobody hears. The
 * write lock passes its read holds
 * (`readsKey`, a Lua variable that may be nil): none may be live for a hand-off; and its waiting
 * writers (`writersKey`, likewise).
 */
export function handOffFreedLock(
  queueKey: string,
  timeoutsKey: string,
  parkedKey: string,
  readWrite: { readonly readsKey?: string; readonly writersKey?: string } = {},
): string {
  const handOff = handOffToParkedHead(queueKey, timeoutsKey, parkedKey, readWrite.writersKey);
  const { readsKey } = readWrite;
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "handOffFreedLock",
    lua: () => handOffFreedLock(queueKey, timeoutsKey, parkedKey, readWrite),
    needs: [queueKey, timeoutsKey, parkedKey, readsKey, "now"],
    provides: ["handedOff", "heads", "registrations"],
  });
  // The head is live while its park lasts (a park ends no later than the waiter's deadline) or
  // its deadline has not passed; only a dead head costs the pruning of every dead waiter.
  return `local heads = redis.call('ZRANGE', ${queueKey}, 0, 1)
local registrations = {}
if heads[1] then
  registrations = redis.call('HMGET', ${parkedKey}, heads[1], heads[2] or heads[1])
  local parkEnd = tonumber(string.match(registrations[1] or '', '^%d+ %d+ %S+ %d+ (%d+)') or '0')
  if parkEnd <= now and tonumber(redis.call('ZSCORE', ${timeoutsKey}, heads[1]) or '0') <= now then
    ${pruneDeadWaiters(queueKey, timeoutsKey)}
    heads = redis.call('ZRANGE', ${queueKey}, 0, 1)
    registrations = heads[1] and redis.call('HMGET', ${parkedKey}, heads[1], heads[2] or heads[1]) or {}
  end
end
local handedOff = false
if not heads[1] then
  ${sweepParked(parkedKey)}
end
${
  readsKey === undefined
    ? handOff
    : `if not (${readsKey} and redis.call('ZCOUNT', ${readsKey}, '(' .. now, '+inf') > 0) then
${handOff}
end`
}`;
}

/**
 * After a release frees the lock: when the live head of the queue is parked, makes it the holder
 * (hold count 1, lease min(its lease, its claim window), the next fencing token), takes it out of
 * the queue (and, with `writersKey`, out of a read-write lock's waiting writers: its wait is over,
 * so readers no longer defer to it), tells it `grant <fence> <lease> <ms since its latest
 * registration>`, and sets `handedOff` (a local of the caller's) to its fencing token. How it is told depends
 * on how the waiter waits (its registration, see registerParked):
 * - on a blocking pop: the grant is pushed to its wake list (twice, so that a pop re-sent after a
 *   lost answer finds it) and its operation record says it holds the lock. Both keys are named
 *   after the waiter's operation id (see LockKeys.wake), keys only this script finds, so this
 *   part is cut out of the scripts sent with Upstash's key-locking flag;
 * - subscribed to the lock's hand-off channel (`handOffsKey`, declared in KEYS): the grant is
 *   published there, prefixed with the waiter's operation id, and recorded as `granted <fence>
 *   <server ms>` in its parked registration (a key every script of the lock declares), which its
 *   next attempt, or a copy of an earlier one, replays (takeAnnouncedGrant) instead of taking the
 *   lock again. The record stays until the hold's release, which turns it into the acquisition's
 *   operation record (clearGrantRecord); that of a grantee that never released goes once it is
 *   as old as an operation record, at a sweep when nobody waits (sweepParked). The word ends with
 *   the number of the registering attempt the grant counts from (ARGV `wakeBy` `sub<n>`, see
 *   registerParked), so that the waiter times the grant from that attempt's send.
 * The head must be live (handOffFreedLock).
 */
export function handOffToParkedHead(
  queueKey: string,
  timeoutsKey: string,
  parkedKey: string,
  writersKey?: string,
): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "handOffToParkedHead",
    lua: () => handOffToParkedHead(queueKey, timeoutsKey, parkedKey, writersKey),
    needs: [
      queueKey,
      timeoutsKey,
      parkedKey,
      ...HAND_OFF_CHANNEL_KEYS,
      writersKey,
      "lockKey",
      "fenceKey",
      "operationTtlMs",
      "now",
      "handedOff",
      "heads",
      "registrations",
    ],
  });
  const leaveWriters =
    writersKey === undefined
      ? ""
      : `
  if ${writersKey} then redis.call('ZREM', ${writersKey}, head) end`;
  // Under key locking only a subscribed waiter can be told (canTell). handOffFreedLock's one
  // HMGET read the head's registration and that of the waiter behind it (for noticeBehind).
  return `local head = heads[1]
local parked = registrations[1]
local claim, lease, id, since, wakeBy, registration, shard
if parked then
  claim, lease, id, since, wakeBy, registration, shard =
    string.match(parked, ${PARKED_REGISTRATION})
end
local canTell = wakeBy == 'sub'
${withoutKeyLocking("canTell = claim ~= nil")}
if canTell then
  lease = math.min(tonumber(claim), tonumber(lease))
  redis.call('HSET', lockKey, ${ownerOfWaiter("head")}, 1)
  redis.call('PEXPIRE', lockKey, lease)
  local fence = redis.call('INCR', fenceKey)
  redis.call('ZREM', ${queueKey}, head)
  redis.call('ZREM', ${timeoutsKey}, head)${leaveWriters}
  local grant = 'grant ' .. fence .. ' ' .. lease .. ' ' .. (now - tonumber(since))
  if wakeBy == 'sub' then
    ${recordAnnouncedGrant(parkedKey, "head")}
    ${publishOnShard("shard", "id .. ' ' .. grant .. ' ' .. registration")}
  end
  ${withoutKeyLocking(`if wakeBy ~= 'sub' then
    redis.call('HDEL', ${parkedKey}, head)
    redis.call('SET', lockKey .. ':op:' .. id, fence, 'PX', operationTtlMs)
    -- Twice: a pop whose answer was lost is re-sent by the Redis client on its own, and the
    -- second copy answers it at once, within the claim window, instead of its full timeout.
    redis.call('RPUSH', lockKey .. ':wake:' .. id, grant, grant)
    -- The copy is of use only within the claim window; then the list goes.
    redis.call('PEXPIRE', lockKey .. ':wake:' .. id, lease)
  end`)}
  handedOff = fence
  ${noticeBehind(queueKey, parkedKey, { head: "heads[2]", registration: "registrations[2]" })}
end`;
}

/**
 * Names, in the scripts that may hand off, of the lock's hand-off channels (in KEYS, in order),
 * one per shard (HAND_OFF_SHARDS).
 */
export const HAND_OFF_CHANNEL_KEYS = [
  "handOffChannel0",
  "handOffChannel1",
  "handOffChannel2",
  "handOffChannel3",
  "handOffChannel4",
  "handOffChannel5",
  "handOffChannel6",
  "handOffChannel7",
] as const;

/** The scripts' values of HAND_OFF_CHANNEL_KEYS: the lock's channels, or none (RedLock). */
export function handOffChannelKeys(
  keys: Pick<LockKeys, "handOffChannels"> | undefined,
): Record<(typeof HAND_OFF_CHANNEL_KEYS)[number], string | undefined> {
  return Object.fromEntries(
    HAND_OFF_CHANNEL_KEYS.map((name, shard) => [name, keys?.handOffChannels[shard]]),
  ) as Record<(typeof HAND_OFF_CHANNEL_KEYS)[number], string | undefined>;
}

/**
 * Lua: publishes `message` on the channel of shard `shard` (Lua expressions; `shard` a string,
 * '' for 0). Each branch names its channel's KEYS variable, so every PUBLISH takes a declared key.
 */
export function publishOnShard(shard: string, message: string): string {
  const branches = HAND_OFF_CHANNEL_KEYS.map(
    (channel, index) => `which == ${index} then redis.call('PUBLISH', ${channel}, word)`,
  );
  return `do
  local which, word = tonumber(${shard}) or 0, ${message}
  if ${branches.join("\n  elseif ")}
  end
end`;
}

/**
 * A Lua string pattern: a parked registration's claim ms, lease ms, operation id, server ms of
 * the registration, and its ` sub<n>.<k>` split into `sub`, n and k (empty for a pop's).
 */
export const PARKED_REGISTRATION = "'^(%d+) (%d+) (%S+) (%d+) %d+ ?(%a*)(%d*)%.?(%d*)$'";

/**
 * Records grant `fence` (a local) announced to parked waiter `member` (a Lua expression) as
 * `granted <fence> <server ms>` in `parkedKey`, for its next attempt, or a late copy of an
 * earlier one, to replay (takeAnnouncedGrant), and keeps the hash at least as long as an
 * operation record. The hold's release clears the record (clearGrantRecord); the record of a
 * hold never released goes once it is as old as an operation record, when nobody waits
 * (sweepParked).
 */
export function recordAnnouncedGrant(parkedKey: string, member: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "recordAnnouncedGrant",
    lua: () => recordAnnouncedGrant(parkedKey, member),
    needs: [parkedKey, member, "fence", "now", "operationTtlMs"],
  });
  return `redis.call('HSET', ${parkedKey}, ${member}, 'granted ' .. fence .. ' ' .. now)
${lengthenTtl(parkedKey, "operationTtlMs")}`;
}

/**
 * First thing in the release of a hold granted by word (ARGV `grantedWaiter`: the waiter's member
 * in `parkedKey`, else empty), whether the hold is still there or not: the grant's record (see
 * recordAnnouncedGrant) becomes the acquisition's operation record (`grantOperationKey`, holding
 * the hold's token `token`), which a late copy of one of its attempts replays as the hold, or
 * finds gone, as it replayed the record; and the record goes.
 */
export function clearGrantRecord(
  parkedKey: string,
  grantOperationKey: string,
  token: string,
): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "clearGrantRecord",
    lua: () => clearGrantRecord(parkedKey, grantOperationKey, token),
    needs: [parkedKey, grantOperationKey, "grantedWaiter", "operationTtlMs"],
  });
  return `if grantedWaiter ~= '' then
  redis.call('HDEL', ${parkedKey}, grantedWaiter)
  redis.call('SET', ${grantOperationKey}, ${token}, 'PX', operationTtlMs)
end`;
}

/**
 * When nobody waits any more (the queue is empty, dead waiters pruned): drops from `parkedKey`
 * what no waiter needs: registrations (every waiter's place is gone; a live one registers again
 * at its next attempt) and the records of grants as old as an operation record (a grantee that
 * never released: its process died holding, or its hold lapsed and it never asked again). A
 * younger record stays: a late copy of its waiter's attempt may still come. One HGETALL where
 * the hash exists, at the end of a spell of contention.
 */
export function sweepParked(parkedKey: string): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "sweepParked",
    lua: () => sweepParked(parkedKey),
    needs: [parkedKey, "now", "operationTtlMs"],
  });
  return `do
  local fields, stale = redis.call('HGETALL', ${parkedKey}), {}
  for i = 1, #fields, 2 do
    local grantedAt = string.match(fields[i + 1], '^granted %d+ (%d+)$')
    if not grantedAt or tonumber(grantedAt) + tonumber(operationTtlMs) <= now then
      stale[#stale + 1] = fields[i]
    end
  end
  if #stale > 0 then redis.call('HDEL', ${parkedKey}, unpack(stale)) end
end`;
}

/**
 * Before an acquire script's replay (replayAcquisition): a hand-off announced to this
 * acquisition (`granted <fence>` in its parked registration, see handOffToParkedHead, or a
 * semaphore's grantToParkedWaiters) becomes its operation record, so the attempt replays that
 * hold (or finds it gone) instead of taking the lock again. A no-op where the caller never parks
 * (`parkedKey` nil). `waiter`: a local with the acquisition's member in `parkedKey` where it is
 * not the lock's `<owner> <parkId>` (a semaphore's names its permits too). Sets `registered`
 * (declared here unless `declare` is false) to whether the acquisition has a registration left
 * to drop: a polling waiter never had one, so its attempts skip the HDEL. Declares `announced`:
 * the grant's token it took (a string), else false, which the replay then need not read back.
 */
export function takeAnnouncedGrant(
  parkedKey: string,
  operationKey: string,
  waiter?: string,
  declare = true,
): string {
  /* @__PURE__ */ LUA_FRAGMENTS.push({
    name: "takeAnnouncedGrant",
    lua: () => takeAnnouncedGrant(parkedKey, operationKey, waiter, declare),
    needs: [
      parkedKey,
      operationKey,
      waiter === undefined ? "owner" : waiter,
      waiter === undefined ? "parkId" : undefined,
      "operationTtlMs",
      declare ? undefined : "registered",
    ],
    provides: declare ? ["registered", "announced"] : ["announced"],
  });
  return `${declare ? "local registered = false\n" : ""}local announced = false
if ${parkedKey} then
  local member = ${waiter ?? "owner .. ' ' .. parkId"}
  registered = redis.call('HGET', ${parkedKey}, member)
  local granted = string.match(registered or '', '^granted (%d+) ')
  if granted then
    registered = false
    announced = granted
    redis.call('HDEL', ${parkedKey}, member)
    redis.call('SET', ${operationKey}, granted, 'PX', operationTtlMs)
  end
end`;
}

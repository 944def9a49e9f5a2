/**
 * Push hand-off (`wait.mode: "push"`): Lua fragments of the parked waiters. A waiter that must
 * wait registers as parked beside its place in the queue (the acquire script) and blocks on a
 * wake list of its own (src/locks/queue/waiting.ts). The release that frees the lock hands it to
 * the head waiter inside the same script when that waiter is parked: the waiter becomes the
 * holder with a fresh fencing token, its acquisition's operation record says so (a re-sent or
 * repeated attempt replays it: exactly once), and the grant is pushed to its wake list, so its
 * blocking pop returns already holding the lock.
 */
import { ownerOfWaiter, pruneDeadWaiters } from "./lua.js";

/**
 * Runs an acquire script's `body` (which may `return` anywhere) so that a park already in flight
 * beside the attempt (ARGV `parkBeside` 1: the waiter sent its blocking pop with the attempt, as
 * it does where it recently had to wait) never blocks for nothing: unless the body registered the
 * waiter as parked (`registerParked` sets `parkedNow`), `none` is pushed to its wake list, so that
 * the pop returns at once. The wake list is the one the hand-off pushes to (see LockKeys.wake).
 */
export function endingParkBeside(body: string): string {
  return `local parkedNow = false
local function attempt()
${body}
end
local reply = attempt()
if parkBeside == '1' and not parkedNow then
  redis.call('RPUSH', lockKey .. ':wake:' .. parkId, 'none')
  redis.call('PEXPIRE', lockKey .. ':wake:' .. parkId, operationTtlMs)
end
return reply`;
}

/**
 * Registers `waiter` (this acquisition) as parked and sets the caller's `parkedNow`, or forgets
 * it (ARGV `claimMs` 0: a polling waiter). Needs `now`, `waiter`, `leaseMs`, `claimMs`, `parkId`
 * (the acquisition's operation id) and a local `timeout`.
 */
export function registerParked(parkedKey: string): string {
  return `if tonumber(claimMs) > 0 then
  parkedNow = true
  redis.call('HSET', ${parkedKey}, waiter, claimMs .. ' ' .. leaseMs .. ' ' .. parkId .. ' ' .. now)
  if redis.call('PTTL', ${parkedKey}) < timeout then redis.call('PEXPIRE', ${parkedKey}, timeout) end
else
  redis.call('HDEL', ${parkedKey}, waiter)
end`;
}

/**
 * After the lock was freed (a release, or a force release of the lock or of its read holds):
 * prunes dead waiters and, when the live head of the queue is parked, hands it the lock (see
 * handOffToParkedHead, whose needs it shares); declares the local `handedOff`. The write lock
 * passes its read holds (`readsKey`, a Lua variable that may be nil): none may be live for a
 * hand-off; and its waiting writers (`writersKey`, likewise).
 */
export function handOffFreedLock(
  queueKey: string,
  timeoutsKey: string,
  parkedKey: string,
  readWrite: { readonly readsKey?: string; readonly writersKey?: string } = {},
): string {
  const handOff = handOffToParkedHead(queueKey, timeoutsKey, parkedKey, readWrite.writersKey);
  const { readsKey } = readWrite;
  return `${pruneDeadWaiters(queueKey, timeoutsKey)}
local handedOff = false
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
 * (hold count 1, lease min(its lease, its claim window), the next fencing token, its operation
 * record), takes it out of the queue (and, with `writersKey`, out of a read-write lock's waiting
 * writers: its wait is over, so readers no longer defer to it) and pushes `grant <fence> <lease> <ms since its latest
 * registration>` to its wake list, and sets `handedOff` (a local of the caller's) to true. The operation record and the wake
 * list are named after the lock key and the waiter's operation id (see LockKeys.wake). Needs
 * `now`, `lockKey`, `fenceKey`, `operationTtlMs`; dead waiters must have been pruned.
 */
export function handOffToParkedHead(
  queueKey: string,
  timeoutsKey: string,
  parkedKey: string,
  writersKey?: string,
): string {
  const leaveWriters =
    writersKey === undefined
      ? ""
      : `
  if ${writersKey} then redis.call('ZREM', ${writersKey}, head) end`;
  return `local head = redis.call('ZRANGE', ${queueKey}, 0, 0)[1]
local parked = head and redis.call('HGET', ${parkedKey}, head)
if parked then
  local claim, lease, id, since = string.match(parked, '^(%d+) (%d+) (%S+) (%d+)$')
  lease = math.min(tonumber(claim), tonumber(lease))
  redis.call('HSET', lockKey, ${ownerOfWaiter("head")}, 1)
  redis.call('PEXPIRE', lockKey, lease)
  local fence = redis.call('INCR', fenceKey)
  redis.call('SET', lockKey .. ':op:' .. id, fence, 'PX', operationTtlMs)
  redis.call('ZREM', ${queueKey}, head)
  redis.call('ZREM', ${timeoutsKey}, head)
  redis.call('HDEL', ${parkedKey}, head)${leaveWriters}
  redis.call('RPUSH', lockKey .. ':wake:' .. id, 'grant ' .. fence .. ' ' .. lease .. ' ' .. (now - tonumber(since)))
  redis.call('PEXPIRE', lockKey .. ':wake:' .. id, operationTtlMs)
  handedOff = true
end`;
}

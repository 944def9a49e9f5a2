/**
 * The members of a MultiLock, grouped by the Redis they live on (by client identity): each group
 * is acquired, extended and released by one script call.
 */
import { LockInputError } from "../../errors.js";
import type { RedisLike } from "../../transport/redis-like.js";
import type { OperationContext } from "../context.js";
import { lockInternalsOf } from "../internals.js";
import type { LockKeys } from "../keys.js";
import { fenceStillAt, SERVER_NOW_MS } from "../lua.js";

/** Most locks one MultiLock may join: every script runs under Redis's global script lock. */
export const MAX_MULTI_LOCK_MEMBERS = 256;

export interface Member {
  readonly name: string;
  readonly keys: LockKeys;
  /** Position in the list the MultiLock was built from. */
  readonly index: number;
}

/** Members on one Redis client; `ctx` is the first member's (its retries and operation ttl). */
export interface MemberGroup {
  readonly ctx: OperationContext;
  readonly members: readonly Member[];
}

export interface GroupedMembers {
  readonly names: readonly string[];
  readonly groups: readonly MemberGroup[];
}

/** Validates `locks` (locks from `client.lock()`, no duplicates) and groups them by Redis. */
export function groupMembers(locks: unknown): GroupedMembers {
  if (!Array.isArray(locks) || locks.length === 0 || locks.length > MAX_MULTI_LOCK_MEMBERS) {
    throw new LockInputError(
      `multiLock(locks) needs an array of 1 to ${MAX_MULTI_LOCK_MEMBERS} locks from client.lock(name).`,
    );
  }
  const byRedis = new Map<RedisLike, { ctx: OperationContext; members: Member[] }>();
  const names: string[] = [];
  locks.forEach((lock: unknown, index) => {
    const internals = lockInternalsOf(lock);
    if (internals === undefined) {
      throw new LockInputError(
        `multiLock(locks): element ${index} is not a lock; pass locks from client.lock(name).`,
      );
    }
    // Taken in one script as a plain lock, a fair lock would silently skip its queue.
    if (internals.kind === "fairLock") {
      throw new LockInputError(
        `multiLock(locks): element ${index} is a fair lock; a MultiLock takes plain locks only (client.lock(name)).`,
      );
    }
    const name = (lock as { name: string }).name;
    const { ctx } = internals.runtime;
    let group = byRedis.get(ctx.redis);
    if (group === undefined) {
      group = { ctx, members: [] };
      byRedis.set(ctx.redis, group);
    }
    // One script would count a lock listed twice as a re-entry: almost surely a mistake.
    if (group.members.some((member) => member.keys.lock === internals.keys.lock)) {
      throw new LockInputError(`multiLock(locks): lock "${name}" is listed twice.`);
    }
    group.members.push({ name, keys: internals.keys, index });
    names.push(name);
  });
  return { names, groups: [...byRedis.values()] };
}

/** KEYS of a group's acquire and rollback scripts: each member's lock and fence, then `record`. */
export function lockAndFenceKeys(group: MemberGroup, record: string): string[] {
  return [...group.members.flatMap((member) => [member.keys.lock, member.keys.fence]), record];
}

/**
 * ARGV of a group's extend and release scripts after their own: each member's fencing token as
 * the handle got it (0 everywhere for the watchdog's renewal, which serves every hold of the
 * owner on the members).
 */
export function memberTokens(group: MemberGroup, tokens: readonly number[] | undefined): string[] {
  return group.members.map((member) => String(tokens?.[member.index] ?? 0));
}

/**
 * Lua shared by the extend and release scripts: `holdsIt(i, token)` is true when the owner
 * (ARGV 1) holds member i (lock hash KEYS 2i-1, fence counter KEYS 2i) with the hold of `token`
 * (0: any hold of the owner). A later first hold moved the fence counter on: a handle whose hold
 * ended must not extend or release the owner's later hold (see refuseLaterHold in lua.ts).
 */
export const HOLDS_IT_LUA = `local function holdsIt(i, token)
  if redis.call('HEXISTS', KEYS[2 * i - 1], ARGV[1]) == 0 then return false end
  return token == 0 or ${fenceStillAt("KEYS[2 * i]", "token")}
end
`;

/** The record of one operation on a group, under the first member's hash tag. */
export function groupRecord(group: MemberGroup, operationId: string): string {
  return group.members[0]!.keys.operation(operationId);
}

/**
 * Lua shared by the acquire and extend scripts: `alignEnds(n, stride, lease)` gives the lock hash
 * of every member (KEYS 1, 1 + stride, …) one common end, the later of `lease` ms from now and the
 * latest end a member already carries. Members of one hold then never expire apart (all or none),
 * and no end moves earlier: other holds of the owner on a member may have been promised it. One
 * absolute PEXPIREAT, because a relative PEXPIRE per member reads the clock once per key; the clock
 * is read after the PTTLs, so `now + pttl` is never before the end a member had.
 */
export const ALIGN_ENDS_LUA = `local function alignEnds(n, stride, lease)
  local ttl = lease
  for i = 1, n do
    local pttl = redis.call('PTTL', KEYS[stride * i - stride + 1])
    if pttl > ttl then ttl = pttl end
  end
  ${SERVER_NOW_MS}
  for i = 1, n do redis.call('PEXPIREAT', KEYS[stride * i - stride + 1], now + ttl) end
end
`;

/** A MultiLock's members grouped by Redis client: one script call per group and operation. */
import { LockInputError } from "../../errors.js";
import type { OperationContext } from "../../hold/context.js";
import { fenceStillAt, SERVER_NOW_MS } from "../../hold/lua.js";
import type { LockKeys } from "../../hold/script.js";
import type { RedisLike } from "../../transport/redis-like.js";
import { lockInternalsOf } from "../single-name-lock.js";

/** Every script runs under Redis's global script lock. */
export const MAX_MULTI_LOCK_MEMBERS = 256;

export interface Member {
  readonly name: string;
  readonly keys: LockKeys;
  readonly index: number;
}

/** `ctx` is the first member's. */
export interface MemberGroup {
  readonly ctx: OperationContext;
  readonly members: readonly Member[];
}

export interface GroupedMembers {
  readonly names: readonly string[];
  readonly groups: readonly MemberGroup[];
}

/** Locks from `client.lock()`, no duplicates. */
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

/** KEYS of the acquire and rollback scripts. */
export function lockAndFenceKeys(group: MemberGroup, record: string): string[] {
  return [...group.members.flatMap((member) => [member.keys.lock, member.keys.fence]), record];
}

/** Trailing ARGV of extend and release; 0s for the watchdog, which serves every hold. */
export function memberTokens(group: MemberGroup, tokens: readonly number[] | undefined): string[] {
  return group.members.map((member) => String(tokens?.[member.index] ?? 0));
}

/**
 * `holdsIt(i, token)`: the owner (ARGV 1) holds member i (KEYS 2i-1, fence KEYS 2i) with the
 * hold of `token` (0: any), so a handle whose hold ended never touches a later one (see
 * refuseLaterHold in lua.ts).
 */
export const HOLDS_IT_LUA = `local function holdsIt(i, token)
  if redis.call('HEXISTS', KEYS[2 * i - 1], ARGV[1]) == 0 then return false end
  return token == 0 or ${fenceStillAt("KEYS[2 * i]", "token")}
end
`;

/** Under the first member's hash tag. */
export function groupRecord(group: MemberGroup, operationId: string): string {
  return group.members[0]!.keys.operation(operationId);
}

/**
 * `alignEnds(n, stride, lease)`: every member (KEYS 1, 1 + stride, …) gets one end, the later of
 * `lease` from now and the latest a member carries: members never expire apart, and no end moves
 * earlier (other holds of the owner may have been promised it). One absolute PEXPIREAT, as a
 * relative PEXPIRE reads the clock per key; read after the PTTLs, `now + pttl` is never early.
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

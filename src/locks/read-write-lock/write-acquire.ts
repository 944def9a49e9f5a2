/**
 * One attempt at the write lock: take it when nobody holds it (no writer, no live read hold),
 * re-enter it, or register as a waiting writer (writer preference: new readers then wait behind
 * it) and, in push mode, as a parked one, queued in arrival order for a hand-off. A reader asking for the write lock without holding it is refused at once: upgrading
 * would deadlock against any other reader doing the same.
 */
import { LockUpgradeError } from "../../errors.js";
import type { AttemptOutcome } from "../acquisition.js";
import type { OperationContext } from "../context.js";
import type { ReadWriteLockKeys } from "../keys.js";
import { grantExclusiveHold, replayAcquisition, SERVER_NOW_MS } from "../lua.js";
import { endingParkBeside, registerParked } from "../queue/hand-off.js";
import { joinQueue, pruneDeadWaiters, refreshWaiter } from "../queue/lua.js";
import { ttlOrNull } from "../reply.js";
import { defineScript, runScript } from "../script.js";
import { acquireKeys } from "./acquire-keys.js";
import { pruneExpiredReads } from "./lua.js";

// KEYS: 1 write hash (owner -> write holds), 2 fence, 3 reads, 4 readers, 5 waiting writers,
//       6 operation record; push mode: 7 queue of parked writers (owner -> ticket), 8 their
//       deadlines, 9 parked waiters (see queue/hand-off.ts)
// ARGV: 1 owner, 2 lease ms, 3 operation record ttl ms, 4 waiter timeout ms (0: do not register
//       as a waiting writer), 5 claim window ms of a writer that will park (0: it polls), 6 its
//       operation id (names its wake list), 7 "1" when its park is already in flight (see
//       endingParkBeside), 8 how long its place in the queue lasts without a request (ms)
// Reply: {1, fence, write holds, pttl} held; {0, ms until the holders' leases end (-1 unknown),
//        place in the queue of parked writers (-1: none)} busy; {-1} a re-sent attempt whose
//        first run acquired, but the hold is gone since; {-2} refused: the owner holds read
//        holds only (an upgrade).
export const WRITE_ACQUIRE = defineScript({
  name: "readWriteLock.acquireWrite",
  keys: [
    "lockKey",
    "fenceKey",
    "readsKey",
    "readersKey",
    "writersKey",
    "operationKey",
    "queueKey",
    "timeoutsKey",
    "parkedKey",
  ],
  optionalKeys: ["queueKey", "timeoutsKey", "parkedKey"],
  args: [
    "owner",
    "leaseMs",
    "operationTtlMs",
    "waiterTimeoutMs",
    "claimMs",
    "parkId",
    "parkBeside",
    "placeMs",
  ],
  replies: {
    1: [4],
    0: [3],
    [-1]: [1],
    [-2]: [1],
  },
  lua: endingParkBeside(`${replayAcquisition("operationKey", "leaseMs")}
${SERVER_NOW_MS}
${pruneExpiredReads("readsKey", "readersKey")}
redis.call('ZREMRANGEBYSCORE', writersKey, '-inf', now)
if queueKey then
${pruneDeadWaiters("queueKey", "timeoutsKey")}
end
local writing = redis.call('HEXISTS', lockKey, owner) == 1
if not writing and redis.call('HEXISTS', readersKey, owner) == 1 then return {-2} end
if not writing then
  local busyFor
  if redis.call('EXISTS', lockKey) == 1 then
    busyFor = redis.call('PTTL', lockKey)
  else
    local last = redis.call('ZRANGE', readsKey, -1, -1, 'WITHSCORES')
    if last[2] then busyFor = tonumber(last[2]) - now end
  end
  if busyFor then
    local timeout = tonumber(waiterTimeoutMs)
    if timeout > 0 then
      ${refreshWaiter("writersKey")}
    end
    local position = -1
    if queueKey and tonumber(claimMs) > 0 then
      timeout = tonumber(placeMs)
      ${joinQueue("queueKey", "timeoutsKey")}
      ${registerParked("parkedKey")}
    end
    return {0, busyFor, position}
  end
end
local count = redis.call('HINCRBY', lockKey, owner, 1)
redis.call('ZREM', writersKey, owner)
if queueKey then
  redis.call('ZREM', queueKey, owner)
  redis.call('ZREM', timeoutsKey, owner)
  redis.call('HDEL', parkedKey, owner)
end
${grantExclusiveHold()}`),
});

/** How one attempt at the write lock waits if it finds the lock busy. */
export interface WriterTerms {
  /**
   * How long the registration as a waiting writer (writer preference) lasts without a poll; 0
   * registers nothing (a single attempt, or writer preference off).
   */
  readonly waiterTimeoutMs: number;
  /** Push mode: the claim window of a writer that will park, and how long its place lasts. */
  readonly park?: { readonly claimMs: number; readonly placeMs: number; readonly beside: boolean };
}

/** An attempt's outcome; a busy one says the writer's place among parked writers (-1: none). */
export type WriteAttemptOutcome =
  | Extract<AttemptOutcome, { kind: "acquired" }>
  | (Extract<AttemptOutcome, { kind: "busy" }> & { readonly position: number });

/**
 * @param operationId names this attempt (see AcquisitionSpec.attempt)
 * @throws LockUpgradeError when `owner` holds read holds but not the write lock
 */
export async function attemptWriteAcquire(
  ctx: OperationContext,
  keys: ReadWriteLockKeys,
  owner: string,
  leaseMs: number,
  terms: WriterTerms,
  lockName: string,
  operationId: string,
): Promise<WriteAttemptOutcome> {
  const { park } = terms;
  const reply = await runScript(
    ctx,
    WRITE_ACQUIRE,
    {
      ...acquireKeys(keys, operationId),
      queueKey: park ? keys.queue : undefined,
      timeoutsKey: park ? keys.timeouts : undefined,
      parkedKey: park ? keys.parked : undefined,
    },
    {
      owner,
      leaseMs,
      operationTtlMs: ctx.operationTtlMs,
      waiterTimeoutMs: terms.waiterTimeoutMs,
      claimMs: park?.claimMs ?? 0,
      parkId: operationId,
      parkBeside: park?.beside ? "1" : "0",
      placeMs: park?.placeMs ?? 0,
    },
  );
  const [status, value, position] = reply;
  if (status === 1) return { kind: "acquired", fencingToken: value ?? 0 };
  if (status === -2) {
    throw new LockUpgradeError(
      `Cannot take the write lock of "${lockName}" while holding only read holds: an upgrade ` +
        "would deadlock against another reader doing the same. Release the read holds first.",
    );
  }
  // -1: an earlier attempt of this operation acquired, and that hold is gone since.
  if (status === -1) {
    return { kind: "busy", holderTtlMs: null, operationSpent: true, position: -1 };
  }
  return { kind: "busy", holderTtlMs: ttlOrNull(value), position: position ?? -1 };
}

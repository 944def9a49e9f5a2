/**
 * Where idempotency() keeps responses: under the lock's hash tag, so one script sees all three.
 *
 *   <prefix>:{<name>}            the lock (owner → hold count), as every edgelock lock
 *   <prefix>:{<name>}:fence      its fence counter
 *   <prefix>:{<name>}:response   the recorded response, kept for the idempotency ttl
 */

import { defineScript, integerReply, type LockKeys, lockKeys, ttlOrNull } from "../hold/script.js";
import { newOperationId } from "../platform.js";
import { callScript, type RetryOptions } from "../transport/call.js";
import type { RedisLike } from "../transport/redis-like.js";
import { decodeRecord, encodeRecord, type RecordedResponse } from "./recorded-response.js";

// Reply: {fence, lock pttl} when no response is stored; {fence, lock pttl, record} when one is.
export const LOOKUP = defineScript({
  name: "idempotency.lookup",
  keys: ["lockKey", "fenceKey", "recordKey"],
  args: [],
  replies: "read by caller",
  lua: `local fence = tonumber(redis.call('GET', fenceKey) or '0')
local pttl = redis.call('PTTL', lockKey)
local record = redis.call('GET', recordKey)
if record then return {fence, pttl, record} end
return {fence, pttl}`,
});

// Reply: {1} stored by the lock's holder; {2} stored after the hold was lost, no response was
//        stored yet; {0} not stored: the hold was lost and another response is stored already.
export const PUT = defineScript({
  name: "idempotency.put",
  keys: ["lockKey", "recordKey", "operationKey"],
  args: ["owner", "record", "recordTtlMs", "operationTtlMs"],
  replies: { 1: [1], 2: [1], 0: [1] },
  lua: `local replay = redis.call('GET', operationKey)
if replay then return {tonumber(replay)} end
local outcome = 0
if redis.call('HEXISTS', lockKey, owner) == 1 then
  redis.call('SET', recordKey, record, 'PX', recordTtlMs)
  outcome = 1
elseif redis.call('SET', recordKey, record, 'PX', recordTtlMs, 'NX') then
  outcome = 2
end
redis.call('SET', operationKey, outcome, 'PX', operationTtlMs)
return {outcome}`,
});

/** The same re-send policy and operation record lifetime as a LockClient on its defaults. */
const RETRY: RetryOptions = { retries: 2, delayMs: 50 };
const OPERATION_TTL_MS = 60_000;

/** What one lookup saw, atomically. */
export interface KeyState {
  readonly record: RecordedResponse | null;
  /** Some request holds the key's lock (it is being processed). */
  readonly locked: boolean;
  /** The holder's remaining lease in ms (null when free or unknown). */
  readonly holderTtlMs: number | null;
  /** The fence counter: the fencing token of the latest acquisition of the key's lock. */
  readonly fence: number;
}

export type PutOutcome = "stored" | "stored-after-lease" | "superseded";

export class ResponseStore {
  readonly #keys: LockKeys;
  readonly #record: string;

  constructor(
    readonly redis: RedisLike,
    prefix: string,
    lockName: string,
  ) {
    this.#keys = lockKeys(prefix, lockName);
    this.#record = `${this.#keys.lock}:response`;
  }

  /** One read-only request: the stored response, and whether the key is being processed. */
  async lookup(): Promise<KeyState> {
    const keys = [this.#keys.lock, this.#keys.fence, this.#record];
    const raw = await callScript(this.redis, LOOKUP, keys, [], RETRY);
    const counters = Array.isArray(raw) ? raw.slice(0, 2) : raw;
    const [fence = 0, pttl = -2] = integerReply(counters, LOOKUP.name);
    const record = Array.isArray(raw) && raw.length > 2 ? decodeRecord(raw[2]) : null;
    return { record, locked: pttl !== -2, holderTtlMs: ttlOrNull(pttl), fence };
  }

  /**
   * Stores `record` for `ttlMs`. Written by the lock's holder it replaces anything; written after
   * the hold was lost (the lease ran out mid-handler) it never replaces another response.
   */
  async put(owner: string, record: RecordedResponse, ttlMs: number): Promise<PutOutcome> {
    const raw = await callScript(
      this.redis,
      PUT,
      [this.#keys.lock, this.#record, this.#keys.operation(newOperationId())],
      [owner, encodeRecord(record), String(ttlMs), String(OPERATION_TTL_MS)],
      RETRY,
    );
    const [outcome] = integerReply(raw, PUT.name);
    if (outcome === 1) return "stored";
    return outcome === 2 ? "stored-after-lease" : "superseded";
  }
}

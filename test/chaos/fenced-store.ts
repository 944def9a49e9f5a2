/**
 * The protected resource of a chaos run: one counter per lock key, read with a plain HGET and
 * written through a fencing check (Kleppmann): a write is accepted only when its token is at least
 * the highest one accepted so far. It reports the previous high-water mark, so that the run can
 * check independently that every accepted write carried a strictly larger token.
 */
import type { RedisLike } from "../../src/index.js";
import { Script } from "../../src/transport/call.js";

// KEYS: 1 store hash (token, writer, value, accepted), 2 set of accepted writer ids
// ARGV: 1 token, 2 writer id, 3 value
// Reply: {1, previous token} accepted; {0, previous token} refused (stale token);
//        {2, previous token} a re-sent write that was accepted already.
const FENCED_WRITE = new Script(
  "chaos.fencedWrite",
  `local previous = tonumber(redis.call('HGET', KEYS[1], 'token') or '-1')
if redis.call('SISMEMBER', KEYS[2], ARGV[2]) == 1 then return {2, previous} end
if tonumber(ARGV[1]) < previous then return {0, previous} end
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'writer', ARGV[2], 'value', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'accepted', 1)
redis.call('SADD', KEYS[2], ARGV[2])
return {1, previous}`,
);

export type WriteStatus = "accepted" | "refused" | "replayed";

export interface WriteResult {
  readonly status: WriteStatus;
  /** The highest token accepted before this write (-1 for none). */
  readonly previousToken: number;
}

export interface StoreTotals {
  /** Writes the store accepted. */
  readonly accepted: number;
  /** The counter's final value. */
  readonly value: number;
}

/** The resource of one lock key, addressed through `redis` (with or without faults). */
export class FencedStore {
  readonly #store: string;
  readonly #writers: string;

  constructor(namespace: string, key: string) {
    // One hash tag, as a real resource on Redis Cluster would need for its script.
    this.#store = `${namespace}:{${key}}:store`;
    this.#writers = `${namespace}:{${key}}:writers`;
  }

  /** The racy read: the counter as it is now. */
  async read(redis: Pick<RedisLikeWithHashes, "hget">): Promise<number> {
    const value = await redis.hget(this.#store, "value");
    return value === null || value === undefined ? 0 : Number(value);
  }

  /** The fenced write of `value` by `writer` holding `token`; re-sending it is harmless. */
  async write(
    redis: RedisLike,
    token: number,
    writer: string,
    value: number,
  ): Promise<WriteResult> {
    const raw = await FENCED_WRITE.run(
      redis,
      [this.#store, this.#writers],
      [String(token), writer, String(value)],
    );
    if (!Array.isArray(raw) || raw.length !== 2) {
      throw new Error(`unexpected reply from the fenced store: ${JSON.stringify(raw)}`);
    }
    const [status, previous] = raw.map(Number) as [number, number];
    return {
      status: status === 1 ? "accepted" : status === 2 ? "replayed" : "refused",
      previousToken: previous,
    };
  }

  /** Accepted writes and the final value, read after the run. */
  async totals(redis: Pick<RedisLikeWithHashes, "hget">): Promise<StoreTotals> {
    const accepted = await redis.hget(this.#store, "accepted");
    return {
      accepted: accepted === null || accepted === undefined ? 0 : Number(accepted),
      value: await this.read(redis),
    };
  }
}

/** The one hash command the store reads with (an `@upstash/redis` client has it). */
export interface RedisLikeWithHashes {
  hget(key: string, field: string): Promise<unknown>;
}

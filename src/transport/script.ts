/**
 * A Lua script bound to its SHA-1. On Upstash itself (an `upstash.io` URL) it is sent as EVALSHA
 * first, the `@upstash/ratelimit` way: a cold isolate of a database that already caches it sends
 * 40 bytes, not the whole text, and EVAL only on NOSCRIPT (a script new to the database, a flush,
 * a failover; the script never ran, so sending it again is safe). Elsewhere (a local server, a
 * plain Redis behind a REST proxy) a client sends EVAL the first time (which caches it), EVALSHA
 * after, EVAL again on NOSCRIPT. So an uncontended operation costs one request once the server
 * knows the script. Calls made while that first EVAL is unanswered (a burst to a cold isolate)
 * send EVALSHA first, as on Upstash: one full text per script and client, not one per call.
 */

import { classifyFailure } from "./failures.js";
import {
  flaggedSource,
  KEY_LOCKING_SHEBANG,
  sentWithKeyLocking,
  talksToUpstash,
} from "./key-locking.js";
import type { RedisLike } from "./redis-like.js";
import { sha1Hex } from "./sha1.js";

export class Script {
  private sha?: Promise<string>;
  /** Redis clients on which this script is known to be cached. */
  private readonly cachedOn = new WeakSet<RedisLike>();
  /** Redis clients on which this script's first EVAL is sent and not yet answered. */
  private readonly firstEvalOn = new WeakSet<RedisLike>();
  /** The same script with Upstash's per-key locking flag (see key-locking.ts). */
  private flagged?: Script;

  constructor(
    /** A short name for errors and debugging, e.g. "lock.acquire". */
    readonly name: string,
    readonly source: string,
  ) {}

  sha1(): Promise<string> {
    this.sha ??= sha1Hex(this.source);
    return this.sha;
  }

  /** This script as sent where per-key locking is on (see flaggedSource). */
  get keyLocking(): Script {
    this.flagged ??= new Script(this.name, flaggedSource(this.source));
    return this.flagged;
  }

  /** `answerBy`: when the caller gives up on the answer (it bounds any wait before sending). */
  run(redis: RedisLike, keys: string[], args: string[], answerBy?: number): Promise<unknown> {
    if (this.source.startsWith(KEY_LOCKING_SHEBANG)) return this.send(redis, keys, args);
    return sentWithKeyLocking(
      redis,
      (flagged) => (flagged ? this.keyLocking : this).send(redis, keys, args),
      answerBy,
    );
  }

  private async send(redis: RedisLike, keys: string[], args: string[]): Promise<unknown> {
    if (!this.cachedOn.has(redis) && !talksToUpstash(redis) && !this.firstEvalOn.has(redis)) {
      this.firstEvalOn.add(redis);
      try {
        const result = await redis.eval(this.source, keys, args);
        this.cachedOn.add(redis);
        return result;
      } finally {
        this.firstEvalOn.delete(redis);
      }
    }
    try {
      return await redis.evalsha(await this.sha1(), keys, args);
    } catch (error) {
      if (classifyFailure(error) !== "noscript") throw error;
      return redis.eval(this.source, keys, args);
    }
  }
}

import type { CallObserver, RetryOptions } from "../transport/call.js";
import type { RedisLike } from "../transport/redis-like.js";

/** What every lock operation needs to reach Redis. Built once per LockClient. */
export interface OperationContext {
  readonly redis: RedisLike;
  readonly retry: RetryOptions;
  /** How long a mutating operation's result is kept for re-sent requests. */
  readonly operationTtlMs: number;
  readonly observer?: CallObserver;
}

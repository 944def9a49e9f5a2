/** Helpers of the semaphore suites: Redis clients that hold back chosen script calls. */
import type { RedisLike } from "../../../src/index.js";

/** Which of the semaphore's scripts a call is, by its keys (the tests' own key layout). */
export function semaphoreCall(keys: readonly string[]): "renew" | "release" | "other" {
  if (!keys[0]?.endsWith(":semaphore:leases")) return "other";
  if (keys.length === 2) return "renew";
  return keys[3]?.endsWith(":semaphore:pace") ? "release" : "other";
}

/**
 * A Redis client that passes each script call through `around(kind, send)`, so that a test can
 * delay a call before it is sent or its answer after.
 */
export function intercepting(
  redis: RedisLike,
  around: (
    kind: ReturnType<typeof semaphoreCall>,
    send: () => Promise<unknown>,
  ) => Promise<unknown>,
): RedisLike {
  return {
    eval: (script, keys, args) => around(semaphoreCall(keys), () => redis.eval(script, keys, args)),
    evalsha: (sha, keys, args) => around(semaphoreCall(keys), () => redis.evalsha(sha, keys, args)),
  };
}

/** A promise with its resolve function, for gating calls in a test. */
export function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

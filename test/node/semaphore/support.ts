/** Helpers of the semaphore suites: Redis clients that hold back chosen script calls. */
import type { RedisLike } from "../../../src/index.js";

/** Which of the semaphore's scripts a call is, by its keys (the tests' own key layout). */
export function semaphoreCall(keys: readonly string[]): "renew" | "release" | "other" {
  if (!keys[0]?.endsWith(":semaphore:leases")) return "other";
  if (keys.length === 1) return "renew";
  return keys[2]?.endsWith(":semaphore:pace") ? "release" : "other";
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

/**
 * The server ms the lease of hold `member` ends, read off the holds hash (SemaphoreKeys.leases):
 * its entry's last number, or now + the key's TTL for the sole hold the fast path took (its entry
 * only its permits); null when the hold is not there.
 */
export async function leaseEndOf(
  redis: {
    hget(key: string, field: string): Promise<unknown>;
    pttl(key: string): Promise<number>;
    time(): Promise<[number, number]>;
  },
  leasesKey: string,
  member: string,
): Promise<number | null> {
  const entry = await redis.hget(leasesKey, member);
  if (entry === null || entry === undefined) return null;
  const parts = String(entry).split(" ");
  if (parts.length === 3) return Number(parts[2]);
  const [[seconds, micros], ttl] = await Promise.all([redis.time(), redis.pttl(leasesKey)]);
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) + ttl;
}

/**
 * Which LockWatchdog object a lease lives in.
 *
 * - `"lock"` (default): one object per lock key. Every registration, heartbeat and release of a
 *   lock meets in one place whoever holds it; lock names are reused, so objects are too.
 * - `"owner"`: one object per owner token. A holder of many locks has one alarm (and one Redis
 *   request) per renewal round instead of one per lock; but owners are fresh per acquisition by
 *   default, so each acquisition creates an object.
 *
 * Both ways, registration and deregistration are one Durable Object request each. The measured
 * comparison is in docs/lease-vs-watchdog.md.
 */
export type ShardBy = "lock" | "owner";

/** The name given to `idFromName()` for the lease (`key`, `owner`). */
export function objectNameFor(shardBy: ShardBy, key: string, owner: string): string {
  return shardBy === "lock" ? `lock:${key}` : `owner:${owner}`;
}

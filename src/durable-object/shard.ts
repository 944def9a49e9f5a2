/**
 * Which LockWatchdog object a lease lives in: `"lock"` (default), one per lock key, reused with
 * the name; `"owner"`, one per owner token, so a holder of many locks has one alarm per round,
 * but a fresh object per acquisition. Compared in docs/lease-vs-watchdog.md.
 */
export type ShardBy = "lock" | "owner";

/** The name given to `idFromName()` for the lease (`key`, `owner`). */
export function objectNameFor(shardBy: ShardBy, key: string, owner: string): string {
  return shardBy === "lock" ? `lock:${key}` : `owner:${owner}`;
}

import type { ReadWriteLockKeys } from "../keys.js";

/**
 * The keys of both acquire scripts (read and write), in their declared names: a fresh operation
 * record per attempt, so that a replay of this attempt is never confused with a later one.
 */
export function acquireKeys(keys: ReadWriteLockKeys, operationId: string) {
  return {
    lockKey: keys.lock,
    fenceKey: keys.fence,
    readsKey: keys.reads,
    readersKey: keys.readers,
    writersKey: keys.writers,
    operationKey: keys.operation(operationId),
  } as const;
}

import type { ReadWriteLockKeys } from "../keys.js";

/**
 * The keys of both acquire scripts (read and write), in their declared names, with the record of
 * operation `operationId`: the acquisition's id, shared by its attempts (see AcquisitionSpec.attempt).
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

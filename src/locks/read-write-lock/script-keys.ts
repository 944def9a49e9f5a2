import { HAND_OFF_CHANNEL_KEYS, handOffChannelKeys } from "../../hold/queue/hand-off.js";
import type { ReadWriteLockKeys } from "../../hold/script.js";

/**
 * The keys of both acquire scripts (read and write), in their declared names, with the record of
 * operation `operationId`: the acquisition's id, shared by its attempts (see AcquisitionSpec.attempt).
 */
export function acquireKeys(keys: ReadWriteLockKeys, operationId: string) {
  return {
    lockKey: keys.lock,
    fenceKey: keys.fence,
    readsKey: keys.reads,
    writersKey: keys.writers,
    operationKey: keys.operation(operationId),
  } as const;
}

/**
 * The keys of the scripts that end read holds (release, force release), in the order they
 * declare them: the read holds, the operation record, and what a hand-off of the freed lock to
 * a parked writer needs (the pace hash: the writer's hold is timed from the hand-off, see
 * timeHandedOffHold in pace.ts).
 */
export const READ_ENDING_KEYS = [
  "readsKey",
  "operationKey",
  "lockKey",
  "fenceKey",
  "queueKey",
  "timeoutsKey",
  "parkedKey",
  ...HAND_OFF_CHANNEL_KEYS,
  "writersKey",
  "holdStatsKey",
] as const;

/** READ_ENDING_KEYS of `keys`, with the record of operation `operationId`. */
export function readEndingKeys(keys: ReadWriteLockKeys, operationId: string) {
  return {
    readsKey: keys.reads,
    operationKey: keys.operation(operationId),
    lockKey: keys.lock,
    fenceKey: keys.fence,
    queueKey: keys.queue,
    timeoutsKey: keys.timeouts,
    parkedKey: keys.parked,
    ...handOffChannelKeys(keys),
    writersKey: keys.writers,
    holdStatsKey: keys.holdStats,
  } as const;
}

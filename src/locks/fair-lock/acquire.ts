/**
 * One attempt at the fair lock: take it when it is free and this owner is at the head of the
 * queue (or the queue is empty), re-enter it, or join / keep a place in the queue and learn when
 * its turn is expected. The script is the plain lock's with the fair rule (exclusive/acquire.ts).
 */
import type { OperationContext } from "../context.js";
import { attemptAcquire, type QueuedAttemptOutcome } from "../exclusive/acquire.js";
import type { FairLockKeys } from "../keys.js";

export type FairAttemptOutcome = QueuedAttemptOutcome;

/**
 * @param waiterTimeoutMs the waiter's place lasts this long without a poll; 0 for a single
 *   attempt, which never enqueues
 * @param operationId names this attempt (see AcquisitionSpec.attempt)
 * @param roundTripMs this waiter's last round trip (0: unknown)
 */
export function attemptFairAcquire(
  ctx: OperationContext,
  keys: FairLockKeys,
  owner: string,
  leaseMs: number,
  waiterTimeoutMs: number,
  operationId: string,
  roundTripMs = 0,
): Promise<FairAttemptOutcome> {
  return attemptAcquire(
    ctx,
    keys,
    "fair",
    owner,
    leaseMs,
    waiterTimeoutMs,
    roundTripMs,
    operationId,
  );
}

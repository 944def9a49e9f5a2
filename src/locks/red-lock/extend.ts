/**
 * Re-arm a RedLock hold on the databases that hold it (the reentrant lock's extend script on
 * each, in parallel): `extend()` and watchdog renewal. It needs a majority too, and concludes as
 * soon as that is certain: re-armed on a quorum → trusted for lease − elapsed − drift again;
 * a quorum out of reach → lost. A slow or failing database does not hold up the answer.
 */
import { LockBackendError } from "../../errors.js";
import { extendLease } from "../lock/extend.js";
import type { QuorumHold } from "./hold.js";
import { validUntil } from "./options.js";

/** True when a majority re-armed; false when a majority can no longer be had; throws if unknown. */
export function extendQuorum(hold: QuorumHold, owner: string, leaseMs: number): Promise<boolean> {
  const { settings } = hold;
  const { quorum } = settings;
  const sentAt = Date.now();
  const held = hold.held;
  return new Promise((resolve, reject) => {
    let rearmed = 0;
    let failed = 0;
    let open = held.length;
    let done = false;
    const conclude = (timedOut: boolean) => {
      if (done) return;
      if (rearmed >= quorum) {
        hold.confirm(validUntil(sentAt, leaseMs, settings));
        resolve(true);
      } else if (rearmed + failed + open < quorum) {
        resolve(false); // too many said the lock is gone there
      } else if (open === 0 || timedOut) {
        reject(
          new LockBackendError(
            `RedLock "${hold.lockName}": re-armed on ${rearmed} of the ${quorum} databases needed; ` +
              `${failed + open} failed or did not answer.`,
          ),
        );
      } else {
        return;
      }
      done = true;
      clearTimeout(timer);
    };
    const timer = setTimeout(() => conclude(true), settings.responseTimeoutMs);
    for (const { db } of held) {
      extendLease(db.ctx, db.keys, owner, leaseMs).then(
        (rearmedThere) => {
          open -= 1;
          if (rearmedThere) rearmed += 1;
          else hold.drop(db.index); // gone there: expired, taken or force-released
          conclude(false);
        },
        () => {
          open -= 1;
          failed += 1;
          conclude(false);
        },
      );
    }
    conclude(false);
  });
}

/**
 * Re-arm a RedLock hold where it is held, in one quorum round: a majority re-armed → trusted for
 * lease − elapsed − drift again; out of reach → lost. It ends once that is certain, so a slow or
 * failing database does not hold up the answer.
 */
import { LockBackendError } from "../../errors.js";
import { extendLease } from "../exclusive/extend.js";
import type { QuorumHold } from "./hold.js";
import { validUntil } from "./options.js";
import { countSlots, type RoundSlot, runRound } from "./round.js";

/** False when a majority can no longer be had; throws if unknown. */
export async function extendQuorum(
  hold: QuorumHold,
  owner: string,
  leaseMs: number,
): Promise<boolean> {
  const { settings } = hold;
  const { quorum } = settings;
  const sentAt = Date.now();
  const held = hold.held;
  const tallyOf = (slots: readonly RoundSlot<boolean>[]) => countSlots(slots, (rearmed) => rearmed);
  const { slots } = await runRound({
    count: held.length,
    deadline: sentAt + settings.responseTimeoutMs,
    maxConcurrent: held.length,
    send: async (i) => {
      const { db, fencingToken } = held[i]!;
      const rearmedThere = await extendLease(db.ctx, db.keys, owner, leaseMs, { fencingToken });
      if (!rearmedThere) hold.drop(db.index); // expired, taken or force-released there
      return rearmedThere;
    },
    decided: (sofar) => {
      const { granted, refused } = tallyOf(sofar);
      return granted >= quorum || held.length - refused < quorum;
    },
  });
  const { granted: rearmed, failed, open } = tallyOf(slots);
  if (rearmed >= quorum) {
    hold.confirm(validUntil(sentAt, leaseMs, settings));
    return true;
  }
  if (rearmed + failed + open < quorum) return false;
  throw new LockBackendError(
    `RedLock "${hold.lockName}": re-armed on ${rearmed} of the ${quorum} databases needed; ` +
      `${failed + open} failed or did not answer.`,
  );
}

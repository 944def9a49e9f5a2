/**
 * Release a RedLock hold where held, in one quorum round, and undo grants in flight. Exactly
 * once per database across repeated `release()` calls: one operation id per database, and one
 * that answered is not asked again.
 */
import { LockBackendError } from "../../errors.js";
import { PACE_TTL_MS } from "../../hold/pace.js";
import { handOffChannelKeys } from "../../hold/queue/hand-off.js";
import { runScript } from "../../hold/script.js";
import type { ReleaseResult } from "../../hold/state.js";
import { newOperationId } from "../../platform.js";
import { RELEASE } from "../exclusive/release.js";
import type { Database } from "./databases.js";
import { settleWithin } from "./deadline.js";
import type { QuorumHold } from "./hold.js";
import { runRound } from "./round.js";
import { undoAcquire } from "./undo.js";

/** Call it again after a LockBackendError. */
export function quorumRelease(hold: QuorumHold, owner: string): () => Promise<ReleaseResult> {
  const operations = new Map<number, string>();
  const answered = new Map<number, boolean>(); // database → still held at release
  return async () => {
    const { settings } = hold;
    // Grants in flight are undone by their own operation ids, beside the releases.
    const late = hold.close().map(({ db, operationId }) => undoAcquire(db, owner, operationId));
    const held = hold.held;
    const pending = held.filter(({ db }) => !answered.has(db.index));
    // Nothing decides early: every database that holds it is asked, within the timeout.
    const [round] = await Promise.all([
      runRound({
        count: pending.length,
        deadline: Date.now() + settings.responseTimeoutMs,
        maxConcurrent: pending.length,
        send: (i) => {
          const { db, fencingToken } = pending[i]!;
          if (!operations.has(db.index)) operations.set(db.index, newOperationId());
          return releaseOn(db, owner, operations.get(db.index)!, fencingToken);
        },
        decided: () => false,
      }),
      settleWithin(Promise.allSettled(late), settings.responseTimeoutMs),
    ]);
    let unknown = 0;
    round.slots.forEach((slot, i) => {
      if (slot.state === "answered") answered.set(pending[i]!.db.index, slot.value);
      else unknown += 1;
    });
    const released = held.filter(({ db }) => answered.get(db.index) === true).length;
    // Others can take the lock once a majority is free; what did not answer expires by itself.
    if (unknown > settings.databases - settings.quorum) {
      throw new LockBackendError(
        `RedLock "${hold.lockName}": release reached ${held.length - unknown} of ${held.length} databases; ` +
          `${unknown} did not answer, so a majority may stay locked until their leases end. Call release() again.`,
      );
    }
    // No majority at release: the hold had been lost before.
    return released + unknown >= settings.quorum
      ? { released: true, holdsLeft: 0 }
      : { released: false };
  };
}

/** True when the owner held it there with this handle's hold (`fencingToken`), now released. */
async function releaseOn(
  db: Database,
  owner: string,
  operationId: string,
  fencingToken: number,
): Promise<boolean> {
  const { ctx, keys } = db;
  // No hold statistics key: a RedLock learns no pacing.
  const [status] = await runScript(
    ctx,
    RELEASE,
    {
      lockKey: keys.lock,
      operationKey: keys.operation(operationId),
      holdStatsKey: undefined,
      queueKey: undefined,
      timeoutsKey: undefined,
      fenceKey: keys.fence,
      parkedKey: undefined,
      ...handOffChannelKeys(undefined),
      grantOperationKey: undefined,
      readsKey: undefined,
      writersKey: undefined,
    },
    {
      owner,
      operationTtlMs: ctx.operationTtlMs,
      paceTtlMs: PACE_TTL_MS,
      fencingToken,
      grantedWaiter: "",
    },
  );
  return status === 1;
}

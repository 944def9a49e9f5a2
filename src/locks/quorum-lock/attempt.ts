/**
 * One RedLock attempt (the Redis docs' steps 1–5): the acquire on every database in parallel,
 * won when a majority granted while still valid (lease − elapsed − drift > 0). It ends once the
 * outcome is certain or at the response timeout, so a slow database does not slow the lock. A
 * won attempt hands requests in flight to the hold, which adopts late grants; whatever is not
 * kept (a lost attempt's grants, unknown outcomes) is undone exactly, by operation id.
 */
import type { QuorumTally } from "../../errors.js";
import { newOperationId } from "../../platform.js";
import { markTransient } from "../../transport/failures.js";
import { acquireOn, type DatabaseVote } from "./acquire.js";
import type { Database } from "./databases.js";
import { settleWithin } from "./deadline.js";
import type { HeldDatabase, LateAnswer } from "./hold.js";
import { type RedLockSettings, ttlUntilQuorum, validUntil } from "./options.js";
import { countSlots, type RoundSlot, runRound } from "./round.js";
import { undoAcquire } from "./undo.js";

export type QuorumAttempt =
  | {
      readonly kind: "acquired";
      readonly held: readonly HeldDatabase[];
      /** In flight at the decision: the hold adopts or undoes them. */
      readonly late: readonly LateAnswer[];
      readonly validUntil: number;
      readonly tally: QuorumTally;
    }
  | {
      /** Others hold it on too many databases (or the majority came too late). */
      readonly kind: "contended";
      readonly holderTtlMs: number | null;
      readonly tally: QuorumTally;
    }
  | {
      /** Too many failed or stayed silent for a majority. */
      readonly kind: "unreachable";
      readonly tally: QuorumTally;
      readonly failures: readonly { readonly database: number; readonly error: unknown }[];
    };

type Slot = RoundSlot<DatabaseVote>;

export async function attemptQuorum(
  databases: readonly Database[],
  owner: string,
  leaseMs: number,
  settings: RedLockSettings,
): Promise<QuorumAttempt> {
  const startedAt = Date.now();
  const trustedUntil = validUntil(startedAt, leaseMs, settings);
  const answerBy = Math.min(startedAt + settings.responseTimeoutMs, trustedUntil);
  const operations = databases.map(() => newOperationId());
  const { slots, answers, timedOut } = await runRound({
    count: databases.length,
    deadline: answerBy,
    maxConcurrent: settings.maxConcurrentRequests,
    send: (i) => acquireOn(databases[i]!, owner, leaseMs, operations[i]!),
    decided: (sofar) => {
      const { granted, refused, failed } = countSlots(sofar, isGrant);
      return granted >= settings.quorum || refused + failed > settings.databases - settings.quorum;
    },
  });
  const now = Date.now();
  const tally = tallyOf(slots, settings, now - startedAt, timedOut);
  const won = tally.acquired >= settings.quorum && now < trustedUntil;

  if (won) {
    // Failed requests may have run: undo them in the background (an undo that never lands
    // leaves a grant that expires with its lease).
    slots.forEach((slot, i) => {
      if (slot.state === "failed")
        undoAcquire(databases[i]!, owner, operations[i]!).catch(() => {});
    });
    const late = slots.flatMap((slot, i): LateAnswer[] =>
      slot.state === "pending"
        ? [{ db: databases[i]!, operationId: operations[i]!, answer: answers[i]! }]
        : [],
    );
    return {
      kind: "acquired",
      held: grantsOf(slots, databases),
      late,
      validUntil: trustedUntil,
      tally,
    };
  }
  const undoing = slots.flatMap((slot, i) =>
    slot.state === "failed" ||
    slot.state === "pending" ||
    (slot.state === "answered" && slot.value.kind === "acquired")
      ? [undoAcquire(databases[i]!, owner, operations[i]!)]
      : [],
  );
  await settleWithin(Promise.allSettled(undoing), settings.responseTimeoutMs);
  if (tally.unreachable > settings.databases - settings.quorum) {
    return {
      kind: "unreachable",
      tally,
      failures: failuresOf(slots, timedOut, answerBy - startedAt),
    };
  }
  const busyTtls = slots.flatMap((slot) =>
    slot.state === "answered" && slot.value.kind === "busy" ? [slot.value.holderTtlMs] : [],
  );
  return {
    kind: "contended",
    holderTtlMs: ttlUntilQuorum(busyTtls, settings.quorum - tally.acquired),
    tally,
  };
}

function isGrant(vote: DatabaseVote): boolean {
  return vote.kind === "acquired";
}

/** Databases still answering count nowhere, or as unreachable when the timeout decided. */
function tallyOf(
  slots: readonly Slot[],
  settings: RedLockSettings,
  elapsedMs: number,
  timedOut: boolean,
): QuorumTally {
  let acquired = 0;
  let busy = 0;
  let unreachable = 0;
  for (const slot of slots) {
    if (slot.state === "answered") {
      if (slot.value.kind === "acquired") acquired += 1;
      else busy += 1;
    } else if (slot.state === "failed" || (slot.state === "pending" && timedOut)) {
      unreachable += 1;
    }
  }
  const { databases, quorum } = settings;
  return { databases, quorum, acquired, busy, unreachable, elapsedMs };
}

function grantsOf(slots: readonly Slot[], databases: readonly Database[]): HeldDatabase[] {
  return slots.flatMap((slot, i) =>
    slot.state === "answered" && slot.value.kind === "acquired"
      ? [{ db: databases[i]!, fencingToken: slot.value.fencingToken }]
      : [],
  );
}

function failuresOf(
  slots: readonly Slot[],
  timedOut: boolean,
  windowMs: number,
): { database: number; error: unknown }[] {
  return slots.flatMap((slot, database) => {
    if (slot.state === "failed") return [{ database, error: slot.error }];
    if (slot.state === "pending" && timedOut) {
      const silent = new Error(`no answer within ${windowMs} ms`);
      return [{ database, error: markTransient(silent) }];
    }
    return [];
  });
}

/**
 * One attempt at every member, the groups in parallel: safe because nobody waits while holding.
 * An attempt that misses any member rolls back, by operation id, every group that took its
 * members or whose outcome is unknown, before sleeping. An unconfirmed rollback is re-sent (same
 * id) before the next attempt: a waiter rides out a brief outage and nothing is counted twice.
 */
import { LockBackendError } from "../../errors.js";
import { newOperationId } from "../../platform.js";
import { isTransientFailure, markTransient } from "../../transport/failures.js";
import { acquireGroup, type GroupAcquisition } from "./acquire.js";
import type { MemberGroup } from "./members.js";
import { rollbackGroup } from "./rollback.js";

/** The same shape as one group's, over all of them. */
export type MultiAttempt = GroupAcquisition;

export interface UnsettledRollback {
  readonly group: MemberGroup;
  readonly operationId: string;
}

export async function attemptAll(
  lockName: string,
  groups: readonly MemberGroup[],
  memberCount: number,
  owner: string,
  leaseMs: number,
  unsettled: UnsettledRollback[],
): Promise<MultiAttempt> {
  await settleRollbacks(lockName, owner, leaseMs, unsettled);
  const operations = groups.map(() => newOperationId());
  const outcomes = await Promise.allSettled(
    groups.map((group, i) => acquireGroup(group, owner, leaseMs, operations[i]!)),
  );
  const acquired = outcomes.every(
    (outcome) => outcome.status === "fulfilled" && outcome.value.kind === "acquired",
  );
  if (acquired)
    return { kind: "acquired", fencingTokens: tokensInOrder(groups, outcomes, memberCount) };

  // Groups that answered "busy" took nothing; every other group is undone, whatever it answered.
  const undone = await Promise.allSettled(
    groups.map((group, i) =>
      isBusy(outcomes[i]!) ? Promise.resolve() : rollbackGroup(group, owner, operations[i]!),
    ),
  );
  const failure = outcomes.find((outcome) => outcome.status === "rejected");
  undone.forEach((outcome, i) => {
    if (outcome.status === "rejected") {
      unsettled.push({ group: groups[i]!, operationId: operations[i]! });
    }
  });
  const unconfirmed = undone.find((outcome) => outcome.status === "rejected");
  if (unconfirmed !== undefined) {
    throw unconfirmedRollback(lockName, leaseMs, unconfirmed.reason, failure?.reason);
  }
  if (failure !== undefined) {
    // Nothing is held: after a transient failure a waiter may try again, with new ids.
    const error = new LockBackendError(messageOf(failure.reason), { cause: failure.reason });
    throw isTransientFailure(failure.reason) ? markTransient(error) : error;
  }
  return busiest(outcomes);
}

/** Throws while any still fails. */
async function settleRollbacks(
  lockName: string,
  owner: string,
  leaseMs: number,
  unsettled: UnsettledRollback[],
): Promise<void> {
  if (unsettled.length === 0) return;
  const pending = unsettled.splice(0);
  const results = await Promise.allSettled(
    pending.map(({ group, operationId }) => rollbackGroup(group, owner, operationId)),
  );
  results.forEach((result, i) => {
    if (result.status === "rejected") unsettled.push(pending[i]!);
  });
  const failed = results.find((result) => result.status === "rejected");
  if (failed !== undefined) throw unconfirmedRollback(lockName, leaseMs, failed.reason);
}

/**
 * Transient when its failure is (the next attempt re-sends it first); if the wait ends here,
 * what it would undo expires with the lease.
 */
function unconfirmedRollback(
  lockName: string,
  leaseMs: number,
  reason: unknown,
  attemptFailure?: unknown,
): LockBackendError {
  const error = new LockBackendError(
    `MultiLock "${lockName}": could not confirm the rollback of a partial acquisition ` +
      `(${messageOf(reason)}); any hold left there expires within its lease of ${leaseMs} ms.`,
    { cause: attemptFailure ?? reason },
  );
  return isTransientFailure(reason) ? markTransient(error) : error;
}

function isBusy(outcome: PromiseSettledResult<GroupAcquisition>): boolean {
  return outcome.status === "fulfilled" && outcome.value.kind === "busy";
}

function tokensInOrder(
  groups: readonly MemberGroup[],
  outcomes: readonly PromiseSettledResult<GroupAcquisition>[],
  memberCount: number,
): number[] {
  const tokens = new Array<number>(memberCount).fill(0);
  groups.forEach((group, i) => {
    const outcome = outcomes[i];
    if (outcome?.status !== "fulfilled" || outcome.value.kind !== "acquired") return;
    const { fencingTokens } = outcome.value;
    group.members.forEach((member, j) => {
      tokens[member.index] = fencingTokens[j] ?? 0;
    });
  });
  return tokens;
}

/** The busy member whose lease ends last: no attempt succeeds before then. */
function busiest(outcomes: readonly PromiseSettledResult<GroupAcquisition>[]): MultiAttempt {
  let result: MultiAttempt = { kind: "busy", blockedBy: null, holderTtlMs: null };
  for (const outcome of outcomes) {
    if (outcome.status !== "fulfilled" || outcome.value.kind !== "busy") continue;
    const { blockedBy, holderTtlMs } = outcome.value;
    if (result.blockedBy === null || (holderTtlMs ?? 0) > (result.holderTtlMs ?? 0)) {
      result = { kind: "busy", blockedBy, holderTtlMs };
    }
  }
  return result;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * One attempt at every member: each Redis's group in one script call, the groups in parallel.
 * Safe in parallel because nobody waits while holding: an attempt that misses any member rolls
 * back every group that took its members or whose outcome is unknown, exactly, by operation id,
 * before the caller sleeps and tries again. A rollback that cannot be confirmed is kept in the
 * acquisition's `unsettled` list and re-sent (same id) before the next attempt: a waiter rides
 * out a brief outage, and nothing the lost attempt took is ever counted twice.
 */
import { LockBackendError } from "../../errors.js";
import { newOperationId } from "../../ids.js";
import { isTransientFailure, markTransient } from "../../transport/failures.js";
import { acquireGroup, type GroupAcquisition } from "./acquire.js";
import type { MemberGroup } from "./members.js";
import { rollbackGroup } from "./rollback.js";

/** One attempt at every member: the same shape as one group's, over all of them. */
export type MultiAttempt = GroupAcquisition;

/** A group acquisition whose rollback is not confirmed yet. */
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
    // Every group was rolled back or took nothing: nothing is held, so a waiter with time left
    // may try again (with new ids) after a transient failure.
    const error = new LockBackendError(messageOf(failure.reason), { cause: failure.reason });
    throw isTransientFailure(failure.reason) ? markTransient(error) : error;
  }
  return busiest(outcomes);
}

/** Re-sends the rollbacks not confirmed yet; throws while any still fails. */
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
 * A rollback not confirmed: transient when its failure is (the next attempt re-sends it first),
 * and if the wait ends here, whatever it would undo expires with the lease.
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

/** The busy member whose holder's lease ends last: before then the attempt cannot succeed. */
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

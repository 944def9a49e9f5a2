/**
 * One attempt at every member: each Redis's group in one script call, the groups in parallel.
 * Safe in parallel because nobody waits while holding: an attempt that misses any member rolls
 * back every group that took its members or whose outcome is unknown, exactly, by operation id,
 * before the caller sleeps and tries again.
 */
import { LockBackendError } from "../../errors.js";
import { newOperationId } from "../../ids.js";
import { acquireGroup, type GroupAcquisition } from "./acquire.js";
import type { MemberGroup } from "./members.js";
import { rollbackGroup } from "./rollback.js";

export type MultiAttempt =
  | { readonly kind: "acquired"; readonly fencingTokens: readonly number[] }
  | {
      readonly kind: "busy";
      readonly blockedBy: string | null;
      readonly holderTtlMs: number | null;
    };

export async function attemptAll(
  lockName: string,
  groups: readonly MemberGroup[],
  memberCount: number,
  owner: string,
  leaseMs: number,
): Promise<MultiAttempt> {
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
  const unconfirmed = undone.find((outcome) => outcome.status === "rejected");
  if (unconfirmed !== undefined) {
    throw new LockBackendError(
      `MultiLock "${lockName}": could not confirm the rollback of a partial acquisition ` +
        `(${messageOf(unconfirmed.reason)}); any hold left there expires within its lease of ${leaseMs} ms.`,
      { cause: failure?.reason ?? unconfirmed.reason },
    );
  }
  if (failure !== undefined) {
    // The other members were rolled back: nothing is held.
    throw failure.reason instanceof LockBackendError
      ? failure.reason
      : new LockBackendError(messageOf(failure.reason), { cause: failure.reason });
  }
  return busiest(outcomes);
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

/**
 * Extend and release every group in parallel. Release is exactly-once per group across repeated
 * `release()` calls: one operation id per group, and a released group is not asked again.
 */
import { LockBackendError } from "../../errors.js";
import type { HoldControl } from "../../hold/handle.js";
import type { ReleaseResult } from "../../hold/state.js";
import { newOperationId } from "../../platform.js";
import { extendGroup } from "./extend.js";
import type { MemberGroup } from "./members.js";
import { releaseGroup } from "./release.js";

/** False when a member is no longer held; throws if unknown. */
export async function extendAll(
  groups: readonly MemberGroup[],
  owner: string,
  leaseMs: number,
  /** None: any hold of the owner. */
  tokens?: readonly number[],
): Promise<boolean> {
  const outcomes = await Promise.allSettled(
    groups.map((group) => extendGroup(group, owner, leaseMs, tokens)),
  );
  if (outcomes.some((outcome) => outcome.status === "fulfilled" && !outcome.value)) return false;
  const failure = outcomes.find((outcome) => outcome.status === "rejected");
  if (failure !== undefined) throw failure.reason;
  return true;
}

export interface MultiHoldControl extends HoldControl {
  /** Members found not held at release. */
  readonly notHeld: readonly string[];
}

/**
 * Named by fencing tokens (by member index): a handle whose hold ended never extends or releases
 * a later hold of the owner.
 */
export function multiHoldControl(
  groups: readonly MemberGroup[],
  owner: string,
  tokens: readonly number[],
): MultiHoldControl {
  const operations = groups.map(() => newOperationId());
  const released: (readonly string[] | undefined)[] = groups.map(() => undefined);
  const notHeld: string[] = [];
  return {
    notHeld,
    extend: (ms) => extendAll(groups, owner, ms, tokens),
    async release(): Promise<ReleaseResult> {
      const outcomes = await Promise.allSettled(
        groups.map(async (group, i) => {
          released[i] ??= await releaseGroup(group, owner, operations[i]!, tokens);
        }),
      );
      const failure = outcomes.find((outcome) => outcome.status === "rejected");
      if (failure !== undefined) {
        // Still held: release() again re-sends only the unfinished groups, same ids.
        throw failure.reason instanceof LockBackendError
          ? failure.reason
          : new LockBackendError(String(failure.reason), { cause: failure.reason });
      }
      notHeld.splice(0, notHeld.length, ...released.flatMap((names) => names ?? []));
      return notHeld.length === 0 ? { released: true, holdsLeft: 0 } : { released: false };
    },
  };
}

/** The owner-addressed operations every lock kind offers beside its handles. */
import { LockNotHeldError } from "../errors.js";
import type { ReleaseResult } from "../hold/state.js";
import { checkOptions, checkOwner } from "../validate.js";
import type { LockRuntime } from "../wait/runtime.js";

/** `lock.release({ owner })`: LockNotHeldError (naming `what`: `Lock "orders"`) if none held. */
export async function releaseForOwner(
  options: unknown,
  what: string,
  release: (owner: string) => Promise<ReleaseResult>,
): Promise<void> {
  const given = checkOptions<{ owner: string }>(options, "release options", ["owner"]);
  const result = await release(checkOwner(given.owner));
  if (!result.released) throw new LockNotHeldError(`${what} is not held by the given owner.`);
}

/** Whose holds `holdCount(owner?)` counts: the given owner, else the scope's, else everyone's. */
export function ownerToCount(runtime: LockRuntime, owner: string | undefined): string | undefined {
  return owner === undefined ? runtime.resolveOwnerIfScoped() : checkOwner(owner);
}

/** The reentrant lock's acquire on one database, by an operation id undo.ts can undo exactly. */

import { PACE_TTL_MS } from "../../hold/pace.js";
import { runScript, ttlOrNull } from "../../hold/script.js";
import { ACQUIRE } from "../exclusive/lock.js";
import type { Database } from "./databases.js";

export type DatabaseVote =
  | { readonly kind: "acquired"; readonly fencingToken: number }
  | { readonly kind: "busy"; readonly holderTtlMs: number | null };

export async function acquireOn(
  db: Database,
  owner: string,
  leaseMs: number,
  operationId: string,
): Promise<DatabaseVote> {
  const { ctx, keys } = db;
  // No pacing keys: nothing is learnt, and a busy reply is {0, holder pttl}.
  const [status, value = 0] = await runScript(
    ctx,
    ACQUIRE,
    {
      lockKey: keys.lock,
      fenceKey: keys.fence,
      operationKey: keys.operation(operationId),
      holdStatsKey: undefined,
      queueKey: undefined,
      timeoutsKey: undefined,
      parkedKey: undefined,
    },
    {
      owner,
      leaseMs,
      operationTtlMs: ctx.operationTtlMs,
      paceTtlMs: PACE_TTL_MS,
      waiterTimeoutMs: 0,
      roundTripMs: 0,
      claimMs: 0,
      parkId: operationId,
      parkBeside: "0",
      wakeBy: "pop",
    },
    { 1: [4], 0: [2], [-1]: [1] },
  );
  // Tokens start at 1; a replayed 0 or -1 is undo.ts's mark: this attempt was undone.
  if (status === 1 && value > 0) return { kind: "acquired", fencingToken: value };
  return { kind: "busy", holderTtlMs: status === 0 ? ttlOrNull(value) : null };
}

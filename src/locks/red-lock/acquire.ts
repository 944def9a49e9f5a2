/**
 * The reentrant lock's own acquire script on one database of a RedLock, with an operation id the
 * caller keeps, so that the attempt can later be undone exactly (see undo.ts).
 */
import { callScript } from "../../transport/call.js";
import { ACQUIRE } from "../lock/acquire.js";
import { checkedReply, ttlOrNull } from "../reply.js";
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
  const raw = await callScript(
    ctx.redis,
    ACQUIRE,
    [keys.lock, keys.fence, keys.operation(operationId)],
    [owner, String(leaseMs), String(ctx.operationTtlMs)],
    ctx.retry,
    ctx.observer,
  );
  const [status, value = 0] = checkedReply(raw, ACQUIRE.name, { 1: [4], 0: [2], [-1]: [1] });
  // Tokens start at 1; a replayed 0 or -1 is undo.ts's mark: this attempt was undone.
  if (status === 1 && value > 0) return { kind: "acquired", fencingToken: value };
  return { kind: "busy", holderTtlMs: status === 0 ? ttlOrNull(value) : null };
}

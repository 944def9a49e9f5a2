/**
 * One renewal by the object, with the hold's own kind's extend script (the one its in-process
 * watchdog uses), naming the hold by its fencing token. Either script re-arms only a hold that
 * still exists and never re-creates one that ended — a lock released or taken, a permit hold
 * whose lease passed (redis-semaphore#175) — so a late alarm cannot revive what it renews.
 */
import type { OperationContext } from "../hold/context.js";
import { lockKeys } from "../hold/script.js";
import { extendLease } from "../locks/exclusive/extend.js";
import { extendPermits } from "../locks/semaphore/extend.js";
import { semaphoreKeys } from "../locks/semaphore/keys.js";
import { parseHoldKey } from "./messages.js";
import type { LeaseRecord } from "./store.js";

/** True when the hold was re-armed to its lease from now (server time), false when it is gone. */
export function renewHold(ctx: OperationContext, lease: LeaseRecord): Promise<boolean> {
  const { prefix, name } = parseHoldKey(lease.key, [lease.kind]);
  const { owner, fencingToken, leaseMs } = lease;
  return lease.kind === "semaphore"
    ? extendPermits(ctx, semaphoreKeys(prefix, name), owner, fencingToken, leaseMs)
    : extendLease(ctx, lockKeys(prefix, name), owner, leaseMs, { fencingToken });
}

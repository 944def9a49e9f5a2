/**
 * The inspector's two writes, through the library's own operations: `forceRelease()` (a parked
 * head waiter gets the lock, as after a release), and the queue's leave script for a dead waiter,
 * which also closes its operation so a late copy of its attempt takes nothing.
 */
import type { LockClient as RootLockClient } from "../client.js";
import { LockInputError } from "../errors.js";
import { leaveQueue } from "../hold/queue/leave.js";
import { readWriteLockKeys } from "../hold/script.js";
import { type PlainLockClient as LockClient, runtimeOf } from "../plain-lock-client.js";
import { callScript, Script } from "../transport/call.js";
import type { ExecRedis } from "./redis.js";
import { digest, splitMember } from "./reply.js";

/** The answer to a force-release or remove-waiter action: whether it was done, and a sentence saying what happened. */
export type ActionResult =
  | { readonly done: true; readonly message: string }
  | { readonly done: false; readonly message: string };

function hasReadWriteLocks(client: LockClient): client is RootLockClient {
  return typeof (client as Partial<RootLockClient>).readWriteLock === "function";
}

/**
 * The queue's members, read by a script sent as EVAL: a global database runs EVAL on its primary,
 * where a plain ZRANGE may be answered by a read region that has not seen a waiter queued moments
 * ago (docs/upstash.md, "Global databases"). The action's own write needs the primary anyway.
 */
export const QUEUE_MEMBERS = new Script(
  "inspector.queueMembers",
  "return redis.call('ZRANGE', KEYS[1], 0, -1)",
);

/** Deletes lock `name` whoever holds it; for a read-write lock, its read holds too. */
export async function forceReleaseLock(
  client: LockClient,
  name: string,
  kind: "lock" | "read-write",
): Promise<ActionResult> {
  if (kind === "read-write") {
    if (!hasReadWriteLocks(client)) {
      throw new LockInputError(
        "This read-write lock needs the LockClient of the root entry (`edgelock`) to force-release.",
      );
    }
    const rw = client.readWriteLock(name);
    const wrote = await rw.writeLock().forceRelease();
    const read = await rw.readLock().forceRelease();
    return wrote || read
      ? { done: true, message: `force-released ${name}` }
      : { done: false, message: `${name} was not held` };
  }
  const released = await client.lock(name).forceRelease();
  return released
    ? { done: true, message: `force-released ${name}` }
    : { done: false, message: `${name} was not held` };
}

/**
 * Removes the waiter whose queue member digests to `waiter` (the browser knows only the digest):
 * one ZRANGE on the primary finds it, the leave script removes it.
 */
export async function removeWaiter(
  client: LockClient,
  redis: ExecRedis,
  name: string,
  waiter: string,
): Promise<ActionResult> {
  const runtime = runtimeOf(client);
  const keys = readWriteLockKeys(runtime.prefix, name);
  const members = await callScript(redis, QUEUE_MEMBERS, [keys.queue], [], runtime.ctx.retry);
  let found: string | undefined;
  for (const member of Array.isArray(members) ? members.map(String) : []) {
    if ((await digest(member)) === waiter) found = member;
  }
  if (found === undefined) return { done: false, message: "that waiter is no longer queued" };
  const { owner, operationId } = splitMember(found);
  const left = await leaveQueue(runtime.ctx, [keys.queue, keys.timeouts], owner, operationId, {
    parkedKey: keys.parked,
    lockKey: keys.lock,
    fenceKey: keys.fence,
    operationKey: keys.operation(operationId),
    writersKey: keys.writers,
  });
  if (left.kind === "handedOff") {
    return {
      done: false,
      message:
        `that waiter was handed the lock meanwhile (fencing token ${left.fencingToken}): ` +
        "force-release the lock if its holder is dead",
    };
  }
  return left.kind === "left"
    ? { done: true, message: `removed the waiter from ${name}'s queue` }
    : { done: false, message: "that waiter is no longer queued" };
}

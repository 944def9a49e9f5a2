/**
 * The inspector on a global database: its views are read where the request lands (a read region
 * may lag the primary), but an action decides on the primary's state. Removing a waiter finds the
 * waiter's queue member first: read from a lagging replica, a waiter queued moments ago was "no
 * longer queued" and stayed.
 */
import { describe, expect, it } from "vitest";
import { readWriteLockKeys } from "../../../src/hold/script.js";
import { QUEUE_MEMBERS } from "../../../src/inspector/actions.js";
import { inspectorHandler } from "../../../src/inspector/index.js";
import { digest } from "../../../src/inspector/reply.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";

const LAG_MS = 500;

describe.each(backendKindsUnderTest())("replica mode, %s: the inspector's actions", (kind) => {
  const bed = useTestBed(kind, { replica: { lagMs: LAG_MS } });

  it("removes a waiter queued moments ago (its lookup reads the primary)", async () => {
    const prefix = freshPrefix();
    const held = await bed.client({ prefix }).fairLock("stuck").acquire({ leaseMs: 30_000 });
    const stopWaiting = new AbortController();
    const waiter = bed
      .client({ prefix })
      .fairLock("stuck")
      .acquire({ leaseMs: 30_000, waitMs: 10_000, signal: stopWaiting.signal })
      .catch((error: Error) => error);
    // The member as the primary has it, the moment it is queued (a page in a region whose replica
    // is ahead of this one's would show it as early).
    const primary = bed.redis();
    const queue = readWriteLockKeys(prefix, "stuck").queue;
    let member: string | undefined;
    for (const deadline = Date.now() + 5_000; member === undefined && Date.now() < deadline; ) {
      const members = (await primary.eval(
        QUEUE_MEMBERS.keyLocking.source,
        [queue],
        [],
      )) as string[];
      member = members[0];
      if (member === undefined) await sleepMs(5);
    }
    expect(member).toBeDefined();

    const handler = inspectorHandler({ client: bed.client({ prefix }), access: () => "write" });
    const response = await handler(
      new Request("http://inspector.test/_edgelock/api/remove-waiter", {
        method: "POST",
        headers: { "content-type": "application/json", "x-edgelock-inspector": "1" },
        body: JSON.stringify({ name: "stuck", waiter: await digest(member as string) }),
      }),
    );
    expect(await response.json()).toEqual({
      done: true,
      message: "removed the waiter from stuck's queue",
    });
    stopWaiting.abort();
    await waiter;
    await held.release();
  });
});

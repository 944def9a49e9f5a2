/**
 * Issue 29 item 10: a scope is ambient to the whole process (one AsyncLocalStorage per copy of
 * edgelock), not to the client that opened it: every LockClient, also one created inside the
 * scope, takes the scope's owner, so acquisitions through two clients on one Redis re-enter.
 */
import { describe, expect, it } from "vitest";
import { LockClient } from "../../../src/index.js";
import { freshPrefix, useTestBed } from "./testbed.js";

describe("client.scope() is process-wide, across clients", () => {
  const bed = useTestBed("embedded");

  it("gives its owner to every client, also to one created inside it", async () => {
    const prefix = freshPrefix();
    const a = bed.client({ prefix });
    const b = bed.client({ prefix });
    const owner = LockClient.newOwner();
    await a.scope(async () => {
      expect(a.currentOwner).toBe(owner);
      expect(b.currentOwner).toBe(owner);
      const created = new LockClient({ redis: bed.redis(), prefix });
      expect(created.currentOwner).toBe(owner);
      // Through two clients on one Redis and prefix: the second acquisition re-enters.
      const first = await a.lock("orders:1").acquire({ leaseMs: 5_000 });
      const second = await created.lock("orders:1").tryAcquire({ leaseMs: 5_000 });
      expect(second?.owner).toBe(owner);
      expect(second?.fencingToken).toBe(first.fencingToken);
      expect(await b.lock("orders:1").holdCount()).toBe(2);
      await second?.release();
      await first.release();
    }, owner);
    expect(a.currentOwner).toBeUndefined();
    expect(b.currentOwner).toBeUndefined();
  });
});

/** Undoing one database's acquire by its operation id: exact whatever the order of arrival. */
import { describe, expect, it } from "vitest";
import { LockClient } from "../../../src/index.js";
import { acquireOn } from "../../../src/locks/quorum-lock/acquire.js";
import { databasesFor } from "../../../src/locks/quorum-lock/databases.js";
import { undoAcquire } from "../../../src/locks/quorum-lock/undo.js";
import { newOperationId } from "../../../src/platform.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sleepMs, useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("RedLock undo by operation id (%s)", (kind) => {
  const bed = useTestBed(kind);

  function setup() {
    const client = bed.client();
    const [db] = databasesFor([client], "undo");
    return { lock: client.lock("undo"), db: db!, owner: LockClient.newOwner() };
  }

  it("makes an acquire that arrives after its undo take nothing", async () => {
    const { lock, db, owner } = setup();
    const operation = newOperationId();
    expect(await undoAcquire(db, owner, operation)).toBe(false);
    expect((await acquireOn(db, owner, 5_000, operation)).kind).toBe("busy");
    expect(await lock.isLocked()).toBe(false);
  });

  it("also when the owner holds the lock through another handle", async () => {
    const { lock, db, owner } = setup();
    const outer = await lock.acquire({ leaseMs: 5_000, owner });
    const operation = newOperationId();
    await undoAcquire(db, owner, operation);
    expect((await acquireOn(db, owner, 5_000, operation)).kind).toBe("busy");
    expect(await lock.holdCount(owner)).toBe(1);
    await outer.release();
  });

  it("undoes exactly the hold of that acquire, once, however often it is sent", async () => {
    const { lock, db, owner } = setup();
    const outer = await lock.acquire({ leaseMs: 5_000, owner });
    const operation = newOperationId();
    expect(await acquireOn(db, owner, 5_000, operation)).toEqual({
      kind: "acquired",
      fencingToken: outer.fencingToken,
    });
    expect(await lock.holdCount(owner)).toBe(2);
    expect(await undoAcquire(db, owner, operation)).toBe(true);
    expect(await undoAcquire(db, owner, operation)).toBe(true); // a re-send replays
    expect(await lock.holdCount(owner)).toBe(1);
    // A late copy of the acquire replays as not acquired.
    expect((await acquireOn(db, owner, 5_000, operation)).kind).toBe("busy");
    expect(await lock.holdCount(owner)).toBe(1);
    await outer.release();
  });

  it("leaves alone a later hold of the same owner, once the acquire's own hold has ended", async () => {
    const { lock, db, owner } = setup();
    // The acquire took a hold that then expired (its answer was lost, say, and the undo was held
    // up past the lease by a latency spike).
    const operation = newOperationId();
    expect((await acquireOn(db, owner, 100, operation)).kind).toBe("acquired");
    await sleepMs(200);
    expect(await lock.isLocked()).toBe(false);
    // Meanwhile the same owner took the lock again, in a later acquisition.
    const later = await lock.acquire({ leaseMs: 5_000, owner });
    // The late undo finds a hold of that owner, but not the acquire's: it must not release it.
    expect(await undoAcquire(db, owner, operation)).toBe(false);
    expect(await lock.holdCount(owner)).toBe(1);
    // Nor when that later hold is a re-entry of a hold the acquire itself had re-entered.
    const reentered = newOperationId();
    expect((await acquireOn(db, owner, 5_000, reentered)).kind).toBe("acquired");
    await later.release();
    await lock.forceRelease();
    const again = await lock.acquire({ leaseMs: 5_000, owner });
    expect(await undoAcquire(db, owner, reentered)).toBe(false);
    expect(await lock.holdCount(owner)).toBe(1);
    await again.release();
  });
});

/** The exactness of a group's operations when requests are re-sent, late, or rolled back. */
import { describe, expect, it } from "vitest";
import { LockClient } from "../../../src/index.js";
import { acquireGroup } from "../../../src/locks/multi-lock/acquire.js";
import { groupMembers } from "../../../src/locks/multi-lock/members.js";
import { releaseGroup } from "../../../src/locks/multi-lock/release.js";
import { rollbackGroup } from "../../../src/locks/multi-lock/rollback.js";
import { newOperationId } from "../../../src/platform.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("MultiLock operations by id (%s)", (kind) => {
  const bed = useTestBed(kind);

  function setup() {
    const client = bed.client();
    const locks = [client.lock("a"), client.lock("b")];
    const group = groupMembers(locks).groups[0]!;
    return { locks, group, owner: LockClient.newOwner() };
  }

  it("makes an acquire that arrives after its rollback take nothing", async () => {
    const { locks, group, owner } = setup();
    const operation = newOperationId();
    await rollbackGroup(group, owner, operation); // the acquire is still "in flight"
    const late = await acquireGroup(group, owner, 5_000, operation);
    expect(late.kind).toBe("busy");
    for (const lock of locks) expect(await lock.isLocked()).toBe(false);
  });

  it("undoes exactly the holds of the rolled-back acquire, once, however often it is sent", async () => {
    const { locks, group, owner } = setup();
    const outer = await locks[0]!.acquire({ leaseMs: 5_000, owner });
    const operation = newOperationId();
    expect((await acquireGroup(group, owner, 5_000, operation)).kind).toBe("acquired");
    expect(await locks[0]!.holdCount(owner)).toBe(2);
    await rollbackGroup(group, owner, operation);
    await rollbackGroup(group, owner, operation); // a re-send
    expect(await locks[0]!.holdCount(owner)).toBe(1); // the outer hold survives
    expect(await locks[1]!.isLocked()).toBe(false);
    // A copy of the acquire arriving now replays as "not acquired" and takes nothing.
    expect((await acquireGroup(group, owner, 5_000, operation)).kind).toBe("busy");
    expect(await locks[0]!.holdCount(owner)).toBe(1);
    await outer.release();
  });

  it("replays a re-sent acquire's tokens without counting it twice", async () => {
    const { locks, group, owner } = setup();
    const operation = newOperationId();
    const first = await acquireGroup(group, owner, 5_000, operation);
    const again = await acquireGroup(group, owner, 5_000, operation);
    expect(again).toEqual(first);
    for (const lock of locks) expect(await lock.holdCount(owner)).toBe(1);
    await releaseGroup(group, owner, newOperationId());
  });

  it("undoes the rest when a re-sent acquire finds one of its holds gone", async () => {
    const { locks, group, owner } = setup();
    const operation = newOperationId();
    await acquireGroup(group, owner, 5_000, operation);
    await locks[1]!.forceRelease();
    expect((await acquireGroup(group, owner, 5_000, operation)).kind).toBe("busy");
    for (const lock of locks) expect(await lock.isLocked()).toBe(false);
  });

  it("replays a re-sent release instead of releasing twice", async () => {
    const { locks, group, owner } = setup();
    await acquireGroup(group, owner, 5_000, newOperationId());
    await acquireGroup(group, owner, 5_000, newOperationId());
    const operation = newOperationId();
    expect(await releaseGroup(group, owner, operation)).toEqual([]);
    expect(await releaseGroup(group, owner, operation)).toEqual([]);
    for (const lock of locks) expect(await lock.holdCount(owner)).toBe(1);
    await locks[0]!.forceRelease();
    expect(await releaseGroup(group, owner, newOperationId())).toEqual(["a"]);
    for (const lock of locks) expect(await lock.isLocked()).toBe(false);
  });
});

/** `edgelock/lock`: PlainLockClient, interchangeable with the root entry's for plain locks. */
import { describe, expect, it } from "vitest";
import { idempotency, withLock } from "../../../src/hono/index.js";
import { LockClient } from "../../../src/index.js";
import { LockHandle, LockInputError, PlainLockClient } from "../../../src/lock.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, useTestBed } from "./testbed.js";

describe.each(backendKindsUnderTest())("edgelock/lock on %s", (kind) => {
  const bed = useTestBed(kind);

  it("locks, re-enters in a scope, and shares keys with the root entry's client", async () => {
    const prefix = freshPrefix();
    const plain = new PlainLockClient({ redis: bed.redis(), prefix });
    const root = new LockClient({ redis: bed.redis(), prefix });
    expect(root).toBeInstanceOf(PlainLockClient);
    expect("fairLock" in plain).toBe(false);

    const held = await plain.lock("entry").acquire({ leaseMs: 5_000 });
    expect(held).toBeInstanceOf(LockHandle);
    expect(await root.lock("entry").isHeldBy(held.owner)).toBe(true);
    await held.release();

    const value = await plain.withLock("entry", () => 7);
    expect(value).toBe(7);
    await plain.scope(async () => {
      const outer = await plain.lock("entry").acquire({ leaseMs: 5_000 });
      const inner = await plain.lock("entry").acquire({ leaseMs: 5_000 });
      expect(inner.owner).toBe(outer.owner);
      await inner.release();
      await outer.release();
    });
    expect(await root.lock("entry").isLocked()).toBe(false);
    // The root entry's other kinds still come from the same runtime.
    const fair = await root.fairLock("entry-fair").acquire({ leaseMs: 5_000 });
    await fair.release();
  });

  it("serves edgelock/hono's middleware like the root entry's client", () => {
    const plain = new PlainLockClient({ redis: bed.redis(), prefix: freshPrefix() });
    expect(() => idempotency({ client: plain })).not.toThrow();
    expect(() => withLock({ client: plain, key: () => "k" })).not.toThrow();
  });

  it("checks its options like the root entry", () => {
    expect(() => new PlainLockClient({ redis: bed.redis(), prefx: "x" } as never)).toThrow(
      LockInputError,
    );
  });
});

import { describe, expect, it } from "vitest";
import { type LockEvent, LockNotHeldError, QuorumLostError, RedLock } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sleepMs, until } from "../exclusive/testbed.js";
import { clientsOn, holdCounts, scriptsOnly, useDatabases } from "./databases.js";

function aborted(signal: AbortSignal, timeoutMs: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("signal did not abort")), timeoutMs);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve(signal.reason);
    });
  });
}

describe.each(backendKindsUnderTest())("RedLock renewal needs a majority (%s)", (kind) => {
  const dbs = useDatabases(kind);

  it("renews on every database while held, and releases everywhere", async () => {
    const clients = clientsOn(dbs, { watchdogTimeoutMs: 1_000 });
    const held = await new RedLock(clients).lock("renewed").acquire();
    expect(held.renewing).toBe(true);
    await until(() => held.heldOn === 3);
    await sleepMs(2_500); // two and a half leases
    expect(await holdCounts(clients, "renewed", held.owner)).toEqual([1, 1, 1]);
    expect(held.signal.aborted).toBe(false);
    expect(held.validityMs).toBeGreaterThan(0);
    await held.release();
    expect(await holdCounts(clients, "renewed")).toEqual([0, 0, 0]);
  });

  it("keeps the hold through one failing database", async () => {
    const clients = clientsOn(dbs, { watchdogTimeoutMs: 1_000 });
    const held = await new RedLock(clients).lock("one-fails").acquire();
    await until(() => held.heldOn === 3);
    dbs[2]!.server.faults.configure({ failBeforeExecute: 1, ...scriptsOnly });
    await sleepMs(2_500);
    expect(held.signal.aborted).toBe(false);
    dbs[2]!.server.faults.disable();
    expect((await holdCounts(clients, "one-fails", held.owner)).slice(0, 2)).toEqual([1, 1]);
    await held.release();
  });

  it("aborts the signal with QuorumLostError when two of three stop answering", async () => {
    const clients = clientsOn(dbs, { watchdogTimeoutMs: 1_000 });
    const held = await new RedLock(clients).lock("two-fail").acquire();
    await until(() => held.heldOn === 3);
    for (const db of dbs.slice(1))
      db.server.faults.configure({ failBeforeExecute: 1, ...scriptsOnly });
    const reason = await aborted(held.signal, 6_000);
    expect(reason).toBeInstanceOf(QuorumLostError);
    for (const db of dbs) db.server.faults.disable();
    await held.release().catch(() => {});
  });

  it("aborts the signal and emits lockLost when renewal finds the lock gone on a majority", async () => {
    const clients = clientsOn(dbs, { watchdogTimeoutMs: 1_000 });
    const events: LockEvent[] = [];
    clients[0]!.on("lockLost", (event) => events.push(event));
    const held = await new RedLock(clients).lock("taken").acquire();
    await until(() => held.heldOn === 3);
    await clients[0]!.lock("taken").forceRelease();
    await clients[1]!.lock("taken").forceRelease();
    const reason = await aborted(held.signal, 6_000);
    expect(reason).toBeInstanceOf(QuorumLostError);
    expect(events.map((event) => event.name)).toEqual(["taken"]);
    await expect(held.release()).rejects.toBeInstanceOf(LockNotHeldError);
    expect(await holdCounts(clients, "taken")).toEqual([0, 0, 0]);
  });

  it("extends on a majority, and fails with the signal aborted once the majority is gone", async () => {
    const clients = clientsOn(dbs);
    const held = await new RedLock(clients).lock("extended").acquire({ leaseMs: 1_000 });
    await until(() => held.heldOn === 3);
    await held.extend(20_000);
    expect(held.validityMs).toBeGreaterThan(15_000);
    // extend() resolves once a majority re-armed; the last database may answer a moment later.
    const remaining = () => Promise.all(clients.map((c) => c.lock("extended").remainingTtl()));
    expect((await remaining()).filter((ttl) => (ttl ?? 0) > 15_000).length).toBeGreaterThanOrEqual(
      2,
    );
    await until(async () => (await remaining()).every((ttl) => (ttl ?? 0) > 15_000));
    await clients[0]!.lock("extended").forceRelease();
    await held.extend(20_000); // two of three still hold it: enough
    // extend() resolves on the majority; the first database's "gone" may arrive just after.
    await until(() => held.heldOn === 2);
    await clients[1]!.lock("extended").forceRelease();
    await expect(held.extend(20_000)).rejects.toBeInstanceOf(LockNotHeldError);
    expect(held.signal.reason).toBeInstanceOf(QuorumLostError);
    await held.release().catch(() => {});
    expect(await holdCounts(clients, "extended")).toEqual([0, 0, 0]);
  });
});

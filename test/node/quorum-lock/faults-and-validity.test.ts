import { describe, expect, it } from "vitest";
import { LockLostError, QuorumUnreachableError, RedLock } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sleepMs, until } from "../exclusive/testbed.js";
import { clientsOn, holdCounts, scriptsOnly, useDatabases } from "./databases.js";

describe.each(backendKindsUnderTest())(
  "RedLock with slow, silent or lossy databases (%s)",
  (kind) => {
    const dbs = useDatabases(kind);

    it("does not wait for a slow database, and adopts its grant when it arrives", async () => {
      const clients = clientsOn(dbs);
      await clients[2]!.lock("warm").isLocked(); // EVAL once, before the latency starts
      dbs[2]!.server.faults.configure({ latencyMs: 1_500, ...scriptsOnly });
      const lock = new RedLock(clients, { responseTimeoutMs: 3_000 }).lock("slow");
      const started = Date.now();
      const held = await lock.acquire({ leaseMs: 10_000 });
      expect(Date.now() - started).toBeLessThan(1_200);
      expect(held.fencingTokens).toEqual([1, 1, null]);
      await until(() => held.heldOn === 3, 5_000);
      expect(held.fencingTokens).toEqual([1, 1, 1]);
      await held.release();
      dbs[2]!.server.faults.disable();
      expect(await holdCounts(clients, "slow")).toEqual([0, 0, 0]);
    });

    it("undoes a late grant that lands after the release", async () => {
      const clients = clientsOn(dbs);
      dbs[2]!.server.faults.configure({ latencyMs: 500, ...scriptsOnly });
      const held = await new RedLock(clients).lock("late").acquire({ leaseMs: 20_000 });
      await held.release(); // the third database's acquire is still on its way
      await sleepMs(700);
      dbs[2]!.server.faults.disable();
      // Without the undo, the third database would stay locked for the whole 20 s lease.
      await until(async () => (await holdCounts(clients, "late"))[2] === 0, 3_000);
      expect(await holdCounts(clients, "late")).toEqual([0, 0, 0]);
    });

    it("counts databases silent past responseTimeoutMs as unreachable, and undoes them", async () => {
      const clients = clientsOn(dbs);
      for (const db of dbs.slice(1))
        db.server.faults.configure({ latencyMs: 2_000, ...scriptsOnly });
      const lock = new RedLock(clients, { responseTimeoutMs: 300 }).lock("silent");
      const started = Date.now();
      // One round, without riding out the outage (wait.outageMs), so that its tally is seen.
      const error = await lock
        .acquire({ leaseMs: 20_000, wait: { outageMs: 0 } })
        .catch((e: unknown) => e);
      expect(Date.now() - started).toBeLessThan(1_700);
      expect(error).toBeInstanceOf(QuorumUnreachableError);
      expect((error as QuorumUnreachableError).tally).toMatchObject({
        acquired: 1,
        unreachable: 2,
      });
      expect((error as Error).message).toMatch(/no answer within 300 ms/);
      await sleepMs(2_300); // the silent requests land, then their undos
      for (const db of dbs) db.server.faults.disable();
      await until(async () => (await holdCounts(clients, "silent")).every((n) => n === 0), 3_000);
    });

    it("undoes a grant whose every answer was lost, and keeps the majority", async () => {
      const clients = clientsOn(dbs);
      dbs[1]!.server.faults.configure({ dropAfterExecute: 1, ...scriptsOnly });
      const held = await new RedLock(clients).lock("lossy").acquire({ leaseMs: 20_000 });
      expect(held.fencingTokens).toEqual([1, null, 1]); // the second ran it, but nobody heard
      await sleepMs(300); // the undo runs too, its answer lost as well
      dbs[1]!.server.faults.disable();
      expect(dbs[1]!.server.faults.counts().dropAfterExecute).toBeGreaterThanOrEqual(2);
      await until(async () => (await holdCounts(clients, "lossy"))[1] === 0, 3_000);
      await held.release();
      expect(await holdCounts(clients, "lossy")).toEqual([0, 0, 0]);
    });

    it("computes validity as lease − elapsed − drift, from before the first request", async () => {
      const clients = clientsOn(dbs);
      for (const client of clients) await client.lock("warm").isLocked();
      for (const db of dbs) db.server.faults.configure({ latencyMs: 100, ...scriptsOnly });
      const lock = new RedLock(clients, { driftFactor: 0.05, driftMs: 10 }).lock("validity");
      const drift = Math.ceil(2_000 * 0.05) + 10;
      const before = Date.now();
      const held = await lock.acquire({ leaseMs: 2_000 });
      const after = Date.now();
      expect(held.validUntil).toBeGreaterThanOrEqual(before + 2_000 - drift);
      // The clock started before the requests, which took at least the 100 ms latency.
      expect(held.validUntil).toBeLessThanOrEqual(after - 100 + 2_000 - drift);
      expect(held.validityMs).toBeLessThanOrEqual(2_000 - drift - 100);
      for (const db of dbs) db.server.faults.disable();
      await held.release();
    });

    it("aborts the signal when the validity runs out, before any lease does", async () => {
      const clients = clientsOn(dbs);
      const lock = new RedLock(clients, { driftFactor: 0.25 }).lock("expiring");
      const held = await lock.acquire({ leaseMs: 2_000 });
      expect(held.validityMs).toBeLessThanOrEqual(2_000 - 502);
      await new Promise((resolve) => held.signal.addEventListener("abort", resolve));
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect((held.signal.reason as Error).message).toMatch(/validity/);
      // The keys still live: the client gave up first, as the drift allowance intends.
      const ttls = await Promise.all(clients.map((c) => c.lock("expiring").remainingTtl()));
      expect(ttls.filter((ttl) => ttl !== null && ttl > 0).length).toBeGreaterThanOrEqual(2);
    });
  },
);

import { describe, expect, it } from "vitest";
import { RedLock } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sleepMs, until } from "../exclusive/testbed.js";
import { clientsOn, holdCounts, scriptsOnly, useDatabases } from "./databases.js";

describe.each(backendKindsUnderTest())("RedLock mutual exclusion under faults (%s)", (kind) => {
  const dbs = useDatabases(kind);

  it("never lets two contenders hold it at once while one database fails and one lags", async () => {
    const prefix = clientsOn(dbs)[0]!.prefix;
    dbs[1]!.server.faults.configure({ latencyMs: 15, jitterMs: 15, ...scriptsOnly });
    dbs[2]!.server.faults.configure({ failBeforeExecute: 0.3, seed: 5, ...scriptsOnly });
    let inside = 0;
    let overlaps = 0;
    let completions = 0;
    const contender = async () => {
      // Each contender is its own isolate: its own Redis clients to the same databases.
      const lock = new RedLock(clientsOn(dbs, { prefix })).lock("contended");
      for (let round = 0; round < 4; round++) {
        const held = await lock.acquire({ leaseMs: 5_000, waitMs: 30_000 });
        inside += 1;
        if (inside > 1) overlaps += 1;
        await sleepMs(5);
        inside -= 1;
        await held.release();
        completions += 1;
      }
    };
    await Promise.all(Array.from({ length: 5 }, contender));
    expect(overlaps).toBe(0);
    expect(completions).toBe(20);
    expect(dbs[2]!.server.faults.counts().failBeforeExecute).toBeGreaterThan(0);
    for (const db of dbs) db.server.faults.disable();
    const clients = clientsOn(dbs, { prefix });
    // A grant on the failing database whose undo also failed expires with its 5 s lease.
    await until(async () => (await holdCounts(clients, "contended")).every((n) => n === 0), 8_000);
  });
});

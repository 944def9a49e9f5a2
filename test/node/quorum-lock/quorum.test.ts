import { describe, expect, it } from "vitest";
import {
  LockInputError,
  LockNotHeldError,
  LockWaitTimeoutError,
  QuorumUnreachableError,
  QuorumWaitTimeoutError,
  RedLock,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { until } from "../exclusive/testbed.js";
import { clientsOn, holdCounts, scriptsOnly, useDatabases } from "./databases.js";

describe.each(backendKindsUnderTest())("RedLock quorum on three databases (%s)", (kind) => {
  const dbs = useDatabases(kind);
  const requests = () => dbs.map((db) => db.requests());
  const delta = (before: number[]) => dbs.map((db, i) => db.requests() - before[i]!);

  it("acquires on every database with one request each, and releases everywhere", async () => {
    const clients = clientsOn(dbs);
    const redLock = new RedLock(clients);
    expect([redLock.databases, redLock.quorum]).toEqual([3, 2]);
    const lock = redLock.lock("orders:1");
    const before = requests();
    const held = await lock.acquire({ leaseMs: 10_000 });
    // It returns once a majority granted it; the last grant joins the hold when it arrives.
    expect(held.heldOn).toBeGreaterThanOrEqual(2);
    await until(() => held.heldOn === 3);
    expect(delta(before)).toEqual([1, 1, 1]);
    expect(held.fencingTokens).toEqual([1, 1, 1]);
    expect(await holdCounts(clients, "orders:1", held.owner)).toEqual([1, 1, 1]);
    const mid = requests();
    await held.release();
    expect(delta(mid)).toEqual([1, 1, 1]);
    expect(await holdCounts(clients, "orders:1")).toEqual([0, 0, 0]);
  });

  it("lets a handle whose hold ended neither release nor extend a later hold of its owner", async () => {
    const clients = clientsOn(dbs);
    const lock = new RedLock(clients).lock("generations");
    const ended = await lock.acquire({ leaseMs: 100 });
    await until(async () => (await holdCounts(clients, "generations")).every((n) => n === 0));
    const later = await lock.acquire({ leaseMs: 10_000, owner: ended.owner });
    await until(() => later.heldOn === 3);
    await expect(ended.extend(60_000)).rejects.toBeInstanceOf(LockNotHeldError);
    await expect(ended.release()).rejects.toBeInstanceOf(LockNotHeldError);
    expect(await holdCounts(clients, "generations", ended.owner)).toEqual([1, 1, 1]);
    await later.release();
  });

  it("reaches the quorum with one database refusing, and holds nothing there", async () => {
    const clients = clientsOn(dbs);
    const lock = new RedLock(clients).lock("one-down");
    dbs[2]!.server.faults.configure({ failBeforeExecute: 1, ...scriptsOnly });
    const held = await lock.acquire({ leaseMs: 10_000 });
    expect(held.heldOn).toBe(2);
    expect(held.fencingTokens).toEqual([1, 1, null]);
    await held.release(); // the third database is not asked: it holds nothing for this handle
    dbs[2]!.server.faults.disable();
    expect(await holdCounts(clients, "one-down")).toEqual([0, 0, 0]);
  });

  it("refuses at once with QuorumUnreachableError when two of three are down (outageMs 0)", async () => {
    const clients = clientsOn(dbs);
    const lock = new RedLock(clients).lock("two-down");
    for (const db of dbs.slice(1))
      db.server.faults.configure({ failBeforeExecute: 1, ...scriptsOnly });
    const started = Date.now();
    // Without riding out outages (a wait rides out transient failures for wait.outageMs).
    const error = await lock
      .acquire({ leaseMs: 10_000, waitMs: 20_000, wait: { outageMs: 0 } })
      .catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error).toBeInstanceOf(QuorumUnreachableError);
    const { tally, failures } = error as QuorumUnreachableError;
    expect(tally).toMatchObject({ databases: 3, quorum: 2, unreachable: 2, busy: 0 });
    expect(failures.map((failure) => failure.database)).toEqual([1, 2]);
    expect((error as Error).message).toMatch(/2 of 3 databases failed/);
    for (const db of dbs) db.server.faults.disable();
    // What the first database granted was rolled back.
    expect(await holdCounts(clients, "two-down")).toEqual([0, 0, 0]);
  });

  it("reports contention as QuorumWaitTimeoutError, with the count, holding nothing", async () => {
    const clients = clientsOn(dbs);
    const others = await Promise.all(
      clients.slice(0, 2).map((client) => client.lock("busy").acquire({ leaseMs: 10_000 })),
    );
    const lock = new RedLock(clients).lock("busy");
    expect(await lock.tryAcquire({ leaseMs: 10_000 })).toBeNull();
    const error = await lock.acquire({ leaseMs: 10_000, waitMs: 200 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuorumWaitTimeoutError);
    expect(error).toBeInstanceOf(LockWaitTimeoutError);
    const timeout = error as QuorumWaitTimeoutError;
    expect(timeout.name).toBe("QuorumWaitTimeoutError");
    expect(timeout.tally).toMatchObject({ busy: 2, unreachable: 0 });
    expect(timeout.holderTtlMs).toBeGreaterThan(5_000);
    expect(timeout.message).toMatch(/2 held by another owner/);
    // The third database granted it at each attempt; every grant was rolled back.
    expect(await holdCounts(clients, "busy")).toEqual([1, 1, 0]);
    for (const other of others) await other.release();
  });

  it("counts one busy and one unreachable database as contention, not as an outage", async () => {
    const clients = clientsOn(dbs);
    const other = await clients[0]!.lock("mixed").acquire({ leaseMs: 10_000 });
    dbs[1]!.server.faults.configure({ failBeforeExecute: 1, ...scriptsOnly });
    const error = await new RedLock(clients)
      .lock("mixed")
      .acquire({ leaseMs: 10_000, waitMs: 100 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuorumWaitTimeoutError);
    expect((error as QuorumWaitTimeoutError).tally).toMatchObject({ busy: 1, unreachable: 1 });
    dbs[1]!.server.faults.disable();
    expect(await holdCounts(clients, "mixed")).toEqual([1, 0, 0]);
    await other.release();
  });

  it("waits until a majority is free", async () => {
    const clients = clientsOn(dbs);
    const others = await Promise.all(
      clients.slice(0, 2).map((client) => client.lock("freed").acquire({ leaseMs: 10_000 })),
    );
    setTimeout(() => void others[0]!.release(), 100);
    const held = await new RedLock(clients)
      .lock("freed")
      .acquire({ leaseMs: 10_000, waitMs: 5_000 });
    expect(held.fencingTokens[0]).toBe(2);
    expect(held.fencingTokens[1]).toBeNull();
    // Every failed attempt drew a token on the free database before it was rolled back.
    expect(held.fencingTokens[2]).toBeGreaterThanOrEqual(1);
    await held.release();
    await others[1]!.release();
  });

  it("lets only one of two RedLocks over the same databases hold the lock", async () => {
    const clients = clientsOn(dbs);
    // Other Redis clients (another isolate), the same keys.
    const first = new RedLock(clientsOn(dbs, { prefix: clients[0]!.prefix })).lock("shared");
    const held = await new RedLock(clients).lock("shared").acquire({ leaseMs: 10_000 });
    await until(() => held.heldOn === 3);
    expect(await first.tryAcquire({ leaseMs: 10_000 })).toBeNull();
    await held.release();
    const next = await first.acquire({ leaseMs: 10_000, waitMs: 1_000 });
    await until(() => next.heldOn === 3);
    expect(next.fencingTokens).toEqual([2, 2, 2]);
    await next.release();
  });

  it("re-enters on every database with the same owner and the same tokens", async () => {
    const clients = clientsOn(dbs);
    const lock = new RedLock(clients).lock("again");
    const outer = await lock.acquire({ leaseMs: 10_000 });
    await until(() => outer.heldOn === 3);
    const inner = await lock.acquire({ leaseMs: 10_000, owner: outer.owner });
    await until(() => inner.heldOn === 3);
    expect(inner.fencingTokens).toEqual(outer.fencingTokens);
    expect(await holdCounts(clients, "again", outer.owner)).toEqual([2, 2, 2]);
    await inner.release();
    expect(await holdCounts(clients, "again", outer.owner)).toEqual([1, 1, 1]);
    await outer.release();
    expect(await holdCounts(clients, "again")).toEqual([0, 0, 0]);
  });

  it("says LockNotHeldError when the majority was lost before release, releasing the rest", async () => {
    const clients = clientsOn(dbs);
    const held = await new RedLock(clients).lock("lost").acquire({ leaseMs: 10_000 });
    await until(() => held.heldOn === 3);
    await clients[0]!.lock("lost").forceRelease();
    await clients[1]!.lock("lost").forceRelease();
    await expect(held.release()).rejects.toBeInstanceOf(LockNotHeldError);
    expect(await holdCounts(clients, "lost")).toEqual([0, 0, 0]);
  });

  it("refuses bad input before any request", async () => {
    const clients = clientsOn(dbs);
    const before = requests();
    expect(() => new RedLock([])).toThrow(LockInputError);
    expect(() => new RedLock([{}] as never)).toThrow(LockInputError);
    expect(() => new RedLock([clients[0]!, clients[0]!])).toThrow(/same Redis client/);
    expect(() => new RedLock(clients, { driftFactor: 2 })).toThrow(LockInputError);
    expect(() => new RedLock(clients, { responseTimeoutMs: 0 })).toThrow(LockInputError);
    expect(() => new RedLock(clients, { drift: 1 } as never)).toThrow(/unknown option/);
    expect(() => new RedLock(clients).lock("a{b}")).toThrow(LockInputError);
    await expect(new RedLock(clients).lock("ok").acquire({ leaseMs: 5 })).rejects.toBeInstanceOf(
      LockInputError,
    );
    expect(delta(before)).toEqual([0, 0, 0]);
  });
});

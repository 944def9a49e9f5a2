/**
 * Issue 13 case 3: a waiter with time left rides out a brief outage. While its `waitMs` has time
 * left, a poll that fails transiently (503, a lost answer) counts as a busy answer; an attempt
 * whose outcome is unknown is re-sent with the same operation id, so a lost acquisition is
 * replayed, never counted twice; the poll budget still applies. For every kind that waits.
 */
import { Redis } from "@upstash/redis";
import { afterEach, describe, expect, it } from "vitest";
import { lockKeys } from "../../../src/hold/script.js";
import { LockBackendError, type LockClient, RedLock } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { sleepMs, useTestBed } from "../exclusive/testbed.js";
import { clientsOn, holdCounts, scriptsOnly, useDatabases } from "../quorum-lock/databases.js";

interface Acquirable {
  acquire(options: {
    waitMs?: number;
    leaseMs?: number;
    wait?: { maxPolls?: number };
  }): Promise<{ release(): Promise<unknown> }>;
}

/** A kind that waits: what holds the way, what waits for it, and whether anything is left. */
interface WaitingKind {
  holder(client: LockClient): Acquirable;
  waiter(client: LockClient): Acquirable;
  isFree(client: LockClient): Promise<boolean>;
}

const KINDS: Record<string, WaitingKind> = {
  lock: {
    holder: (c) => c.lock("x"),
    waiter: (c) => c.lock("x"),
    isFree: async (c) => !(await c.lock("x").isLocked()),
  },
  fairLock: {
    holder: (c) => c.fairLock("x"),
    waiter: (c) => c.fairLock("x"),
    isFree: async (c) => !(await c.fairLock("x").isLocked()),
  },
  "write lock": {
    holder: (c) => c.readWriteLock("x").writeLock(),
    waiter: (c) => c.readWriteLock("x").writeLock(),
    isFree: async (c) => !(await c.readWriteLock("x").writeLock().isLocked()),
  },
  "read lock": {
    holder: (c) => c.readWriteLock("x").writeLock(),
    waiter: (c) => c.readWriteLock("x").readLock(),
    isFree: async (c) => !(await c.readWriteLock("x").readLock().isLocked()),
  },
  multiLock: {
    holder: (c) => c.lock("a"),
    waiter: (c) => c.multiLock([c.lock("a"), c.lock("b")]),
    isFree: async (c) => !(await c.lock("a").isLocked()) && !(await c.lock("b").isLocked()),
  },
};

const SCRIPTS = ["eval", "evalsha"];

function quickRedis(url: string, token: string): Redis {
  return new Redis({ url, token, enableTelemetry: false, retry: { retries: 0 } });
}

describe.each(backendKindsUnderTest())("waiting through transient failures on %s", (backend) => {
  const bed = useTestBed(backend);
  afterEach(() => bed.server.faults.disable());

  describe.each(Object.entries(KINDS))("%s", (_, kind) => {
    it("a waiter acquires after a one-second burst of 503s", async () => {
      const client = bed.client();
      const held = await kind.holder(client).acquire({ leaseMs: 10_000 });
      const waiting = kind.waiter(client).acquire({ waitMs: 10_000, leaseMs: 5_000 });
      const outcome = waiting.then(
        (handle) => handle,
        (error: unknown) => error,
      );
      await sleepMs(100);
      bed.server.faults.configure({ failBeforeExecute: 1, commands: SCRIPTS });
      await sleepMs(1_000);
      bed.server.faults.disable();
      await held.release();
      const handle = await outcome;
      expect(handle).not.toBeInstanceOf(Error);
      await (handle as { release(): Promise<unknown> }).release();
      expect(await kind.isFree(client)).toBe(true);
    });

    it("answers lost after the acquisition ran: acquired once, free after the release", async () => {
      // No retries in @upstash/redis: each poll fails within ~150 ms (edgelock's re-sends), so
      // the wait crosses the window over several failed polls of one operation id.
      const client = bed.client({ redis: quickRedis(bed.server.url, bed.server.token) });
      // The holder's lease ends inside the window in which every answer is lost: the waiter's
      // acquisition runs, its answer (and every re-send's) is lost, and only a replay tells it.
      await kind.holder(client).acquire({ leaseMs: 300 });
      const waiting = kind.waiter(client).acquire({ waitMs: 10_000, leaseMs: 5_000 });
      const outcome = waiting.then(
        (handle) => handle,
        (error: unknown) => error,
      );
      await sleepMs(50);
      bed.server.faults.configure({ dropAfterExecute: 1, commands: SCRIPTS });
      await sleepMs(1_200);
      bed.server.faults.disable();
      const handle = await outcome;
      expect(handle).not.toBeInstanceOf(Error);
      await (handle as { release(): Promise<unknown> }).release();
      expect(await kind.isFree(client)).toBe(true);
    });

    it("still counts failed polls against maxPolls", async () => {
      const client = bed.client({ retries: 0 });
      const held = await kind.holder(client).acquire({ leaseMs: 10_000 });
      bed.server.faults.configure({ failBeforeExecute: 1, commands: SCRIPTS });
      const failed = bed.server.faults.counts().failBeforeExecute;
      const started = Date.now();
      const error = await kind
        .waiter(client)
        .acquire({ waitMs: 30_000, leaseMs: 5_000, wait: { maxPolls: 3 } })
        .then(
          () => null,
          (failure: unknown) => failure,
        );
      expect(error).toBeInstanceOf(LockBackendError);
      expect(Date.now() - started).toBeLessThan(10_000);
      // Three polls, one request each (no re-sends with retries: 0); a multi-lock also rolls
      // back each failed attempt, and re-sends the unconfirmed rollback before the next.
      const requests = bed.server.faults.counts().failBeforeExecute - failed;
      expect(requests).toBeGreaterThanOrEqual(3);
      expect(requests).toBeLessThanOrEqual(6);
      bed.server.faults.disable();
      await held.release();
    });
  });

  it("an outage longer than wait.outageMs ends the wait with its failure", async () => {
    const client = bed.client({ wait: { outageMs: 500 } });
    const held = await client.lock("x").acquire({ leaseMs: 10_000 });
    bed.server.faults.configure({ failBeforeExecute: 1, commands: SCRIPTS });
    const started = Date.now();
    await expect(client.lock("x").acquire({ waitMs: 30_000 })).rejects.toBeInstanceOf(
      LockBackendError,
    );
    // 500 ms of failures, then the poll under way; far below the 30 s the wait had.
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    expect(Date.now() - started).toBeLessThan(3_000);
    bed.server.faults.disable();
    await held.release();
  });

  it("waitMs 0 still throws the failure at once", async () => {
    const client = bed.client();
    const held = await client.lock("x").acquire({ leaseMs: 10_000 });
    bed.server.faults.configure({ failBeforeExecute: 1, commands: SCRIPTS });
    const started = Date.now();
    await expect(client.lock("x").acquire({ waitMs: 0 })).rejects.toBeInstanceOf(LockBackendError);
    expect(Date.now() - started).toBeLessThan(3_000);
    bed.server.faults.disable();
    await held.release();
  });

  it("a refusal (a script error) ends a wait with time left at once", async () => {
    const client = bed.client();
    // A string where the lock's hash should be: the acquire script fails with WRONGTYPE.
    await bed.redis().set(lockKeys(client.prefix, "wrong").lock, "not a hash");
    const started = Date.now();
    await expect(client.lock("wrong").acquire({ waitMs: 10_000, leaseMs: 1_000 })).rejects.toThrow(
      /WRONGTYPE/,
    );
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});

describe.each(backendKindsUnderTest())("a RedLock waiting through an outage on %s", (backend) => {
  const beds = useDatabases(backend);

  it("a waiter acquires after a one-second burst of 503s on every database", async () => {
    const clients = clientsOn(beds);
    const redLock = new RedLock(clients);
    const held = await redLock.lock("x").acquire({ leaseMs: 10_000 });
    const outcome = redLock
      .lock("x")
      .acquire({ waitMs: 10_000, leaseMs: 5_000 })
      .then(
        (handle) => handle,
        (error: unknown) => error,
      );
    await sleepMs(100);
    for (const bed of beds) bed.server.faults.configure({ failBeforeExecute: 1, ...scriptsOnly });
    await sleepMs(1_000);
    for (const bed of beds) bed.server.faults.disable();
    await held.release();
    const handle = await outcome;
    expect(handle).not.toBeInstanceOf(Error);
    await (handle as { release(): Promise<unknown> }).release();
    expect(await holdCounts(clients, "x")).toEqual([0, 0, 0]);
  });
});

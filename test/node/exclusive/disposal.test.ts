/**
 * Leaving `await using` (or `withLock`) never throws over finished work: a hold found lost at
 * release, or a release Redis did not answer, is reported through `signal`, `lockLost` and the
 * handle's state. An explicit `release()` keeps its typed error.
 */
import { describe, expect, it } from "vitest";
import {
  type HeldLock,
  LockBackendError,
  type LockClient,
  type LockEvent,
  LockLostError,
  LockNotHeldError,
  RedLock,
} from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, slowScriptAnswers, until, useTestBed } from "./testbed.js";

interface AcquirableHold {
  acquire(options: { leaseMs: number }): Promise<HeldLock>;
}

const scriptsOnly = { commands: ["eval", "evalsha"] } as const;

function lostEvents(client: LockClient): LockEvent[] {
  const events: LockEvent[] = [];
  client.on("lockLost", (event) => events.push(event));
  return events;
}

/** `await using` a hold that `loseIt` takes away mid-block; returns the block's result. */
async function finishAfterLoss<H extends HeldLock>(
  acquire: () => Promise<H>,
  loseIt: () => Promise<unknown>,
  seen: { held?: H },
): Promise<string> {
  await using held = await acquire();
  seen.held = held;
  await loseIt();
  return "finished";
}

describe.each(backendKindsUnderTest())("disposal after the hold was lost (%s)", (kind) => {
  const bed = useTestBed(kind);

  it("plain lock: a force-released hold still returns the block's result", async () => {
    const client = bed.client();
    const events = lostEvents(client);
    const lock = client.lock("dispose-forced");
    const seen: { held?: HeldLock } = {};
    const result = await finishAfterLoss(
      () => lock.acquire({ leaseMs: 10_000 }),
      () => bed.client({ prefix: client.prefix }).lock("dispose-forced").forceRelease(),
      seen,
    );
    expect(result).toBe("finished");
    expect(seen.held?.released).toBe(true);
    expect(seen.held?.signal.aborted).toBe(true);
    expect(seen.held?.signal.reason).toBeInstanceOf(LockLostError);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: "lockLost", name: "dispose-forced" });
  });

  it("plain lock: a lease that ran out mid-block is reported, not thrown", async () => {
    const client = bed.client();
    const events = lostEvents(client);
    const lock = client.lock("dispose-expired");
    const seen: { held?: HeldLock } = {};
    const result = await finishAfterLoss(
      () => lock.acquire({ leaseMs: 150 }),
      () => until(async () => !(await lock.isLocked()), 5_000),
      seen,
    );
    expect(result).toBe("finished");
    expect(seen.held?.signal.aborted).toBe(true);
    expect(events.map((event) => event.type)).toEqual(["lockLost"]);
  });

  it("plain lock: an explicit release() still throws LockNotHeldError", async () => {
    const client = bed.client();
    const events = lostEvents(client);
    const held = await client.lock("explicit").acquire({ leaseMs: 10_000 });
    await client.lock("explicit").forceRelease();
    await expect(held.release()).rejects.toBeInstanceOf(LockNotHeldError);
    expect(held.signal.aborted).toBe(true);
    expect(events).toHaveLength(1);
    await expect(held[Symbol.asyncDispose]()).resolves.toBeUndefined();
  });

  it("plain lock: a release Redis does not answer is reported, and the watchdog stops", async () => {
    const client = bed.client({ watchdogTimeoutMs: 1_000, retries: 0 });
    const events = lostEvents(client);
    const lock = client.lock("dispose-unanswered");
    const seen: { held?: HeldLock } = {};
    try {
      const result = await finishAfterLoss(
        () => lock.acquire(),
        async () => bed.server.faults.configure({ failBeforeExecute: 1, ...scriptsOnly }),
        seen,
      );
      expect(result).toBe("finished");
    } finally {
      bed.server.faults.disable();
    }
    expect(seen.held?.released).toBe(false);
    expect(seen.held?.signal.aborted).toBe(true);
    expect(events).toHaveLength(1);
    expect(events[0]?.type === "lockLost" && events[0].cause).toBeTruthy();
    // No renewal any more: the watchdog timeout frees the lock.
    await until(async () => !(await lock.isLocked()), 5_000);
  });

  it("withLock: the function's result is returned and the loss reported", async () => {
    const client = bed.client();
    const events = lostEvents(client);
    let signal: AbortSignal | undefined;
    const value = await client.withLock(
      "with-lost",
      async (held) => {
        signal = held.signal;
        await client.lock("with-lost").forceRelease();
        return 7;
      },
      { leaseMs: 10_000 },
    );
    expect(value).toBe(7);
    expect(signal?.aborted).toBe(true);
    expect(events).toHaveLength(1);
    const failure = new Error("work failed");
    await expect(
      client.withLock("with-lost", async () => {
        await client.lock("with-lost").forceRelease();
        throw failure;
      }),
    ).rejects.toBe(failure);
  });

  it.each([
    // Issue 41: an answer slower than the lease brought back a hold already lost; fn ran on it
    // while another owner could hold the lock.
    { mode: "lease", client: {}, acquire: { leaseMs: 300 } },
    // In watchdog mode nothing checked an answer slower than the watchdog timeout (the first
    // lease): a chaos run showed four holders of three permits behind concurrencyLimit().
    { mode: "watchdog", client: { watchdogTimeoutMs: 300 }, acquire: {} },
  ])(
    "withLock ($mode mode): fn starts only on a hold still valid when its answer arrived",
    async (setting) => {
      const prefix = freshPrefix();
      const slow = slowScriptAnswers(bed.redis());
      const client = bed.client({ prefix, redis: slow.redis, ...setting.client });
      const rival = bed.client({ prefix });
      slow.state.delayMs = 700; // the acquire's answer comes back after its 300 ms first lease
      const started: { aborted: boolean; token: number }[] = [];
      const running = client.withLock(
        "with-late",
        (held) => {
          started.push({ aborted: held.signal.aborted, token: held.fencingToken });
          return held.fencingToken;
        },
        { waitMs: 5_000, ...setting.acquire },
      );
      await sleepMs(150); // its script is sent by now
      slow.state.delayMs = 0;
      const token = await running;
      // One start, on a live hold: the second acquisition (the first one's lease was over).
      expect(started).toEqual([{ aborted: false, token: 2 }]);
      expect(token).toBe(2);
      await until(async () => !(await rival.lock("with-late").isLocked()));
    },
  );

  it("withLock: answers always slower than the lease end in LockBackendError, fn never run", async () => {
    const prefix = freshPrefix();
    const slow = slowScriptAnswers(bed.redis());
    const client = bed.client({ prefix, redis: slow.redis });
    slow.state.delayMs = 500;
    let runs = 0;
    const failure = await client
      .withLock("with-slow", () => (runs += 1), { leaseMs: 200, waitMs: 10_000 })
      .catch((error: unknown) => error);
    expect(runs).toBe(0);
    expect(failure).toBeInstanceOf(LockBackendError);
    expect((failure as Error).message).toContain("Redis answers slower than the lease");
    slow.state.delayMs = 0;
    await until(async () => !(await client.lock("with-slow").isLocked()));
  });

  /** A lock of several names or databases, and the one member whose loss loses the hold. */
  const composites: [string, (client: LockClient) => AcquirableHold, string][] = [
    ["multi-lock", (client) => client.multiLock([client.lock("m-a"), client.lock("m-b")]), "m-a"],
    ["RedLock", (client) => new RedLock([client]).lock("q-lost"), "q-lost"],
  ];

  it.each(composites)(
    "%s: a hold lost mid-block is reported, not thrown",
    async (_, make, member) => {
      const client = bed.client();
      const events = lostEvents(client);
      const composite = make(client);
      const seen: { held?: HeldLock } = {};
      const result = await finishAfterLoss(
        () => composite.acquire({ leaseMs: 10_000 }),
        () => client.lock(member).forceRelease(),
        seen,
      );
      expect(result).toBe("finished");
      expect(seen.held?.signal.aborted).toBe(true);
      expect(seen.held?.released).toBe(true);
      expect(events).toHaveLength(1);
      expect(await client.lock("m-b").isLocked()).toBe(false);

      const again = await composite.acquire({ leaseMs: 10_000 });
      await client.lock(member).forceRelease();
      await expect(again.release()).rejects.toBeInstanceOf(LockNotHeldError);
    },
  );
});

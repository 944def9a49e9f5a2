/**
 * The semaphore's fast path (issue 42): an acquire that finds nobody queued or parked and no
 * record of its request skips the queue's work (and, with no hold at all, the leases' pruning
 * and counting); a release that nobody waits behind only drops its hold. Counted in billed
 * commands (every command a script runs, plus the call itself), as Upstash bills them; and what
 * the fast path must still do: statistics from the holds somebody waited behind, a lapsed hold
 * reported gone, a re-sent release replayed.
 */
import { describe, expect, it } from "vitest";
import { PACE_TTL_MS } from "../../../src/hold/pace.js";
import { SEMAPHORE_ACQUIRE, waiterMember } from "../../../src/locks/semaphore/acquire.js";
import { permitHandOffKeys } from "../../../src/locks/semaphore/hand-off.js";
import { semaphoreKeys } from "../../../src/locks/semaphore/keys.js";
import { SEMAPHORE_RELEASE } from "../../../src/locks/semaphore/release.js";
import { newOperationId } from "../../../src/platform.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "../exclusive/testbed.js";

describe.each(backendKindsUnderTest())("the semaphore's fast path on %s", (kind) => {
  const bed = useTestBed(kind);

  /** What `operation` cost: billed commands and requests, read off the server's counters. */
  async function costOf<T>(operation: () => Promise<T>) {
    const before = bed.server.stats.snapshot();
    const result = await operation();
    const after = bed.server.stats.snapshot();
    return {
      result,
      billed: after.billedCommands - before.billedCommands,
      requests: after.requests - before.requests,
    };
  }

  /** A semaphore of `permits` whose capacity is already set (as in a running app). */
  async function semaphoreOf(name: string, permits: number, prefix = freshPrefix()) {
    const semaphore = bed.client({ prefix }).semaphore(name);
    await semaphore.setPermits(permits);
    return semaphore;
  }

  it("an uncontended acquire costs 7 billed commands and its release 5, one request each", async () => {
    const prefix = freshPrefix();
    const semaphore = await semaphoreOf("idle", 1, prefix);
    const acquired = await costOf(() => semaphore.acquire({ leaseMs: 10_000 }));
    // One EXISTS, the capacity, the token, the hold (its entry and its key's TTL: its lease),
    // the operation record: plus the EVALSHA itself. No clock.
    expect(acquired).toMatchObject({ billed: 7, requests: 1 });
    const keys = semaphoreKeys(prefix, "idle");
    const member = `${acquired.result.owner} ${acquired.result.fencingToken}`;
    expect(String(await bed.redis().hget(keys.leases, member))).toBe("1");
    expect(await bed.redis().pttl(keys.leases)).toBeGreaterThan(9_000);
    const released = await costOf(() => acquired.result.release());
    // The record claimed (SET NX), the hold's entry read, one EXISTS over the queue and the
    // parked waiters, the key deleted. No clock: the sole hold lives while its key does.
    expect(released).toMatchObject({ billed: 5, requests: 1 });
    expect(await bed.redis().exists(keys.leases)).toBe(0);
  });

  it("beside another hold with permits free and nobody queued, an acquire costs 11 and writes the sole hold out in full", async () => {
    const prefix = freshPrefix();
    const keys = semaphoreKeys(prefix, "shared");
    const semaphore = await semaphoreOf("shared", 3, prefix);
    const other = await bed.client({ prefix }).semaphore("shared").acquire({ leaseMs: 10_000 });
    const otherMember = `${other.owner} ${other.fencingToken}`;
    expect(String(await bed.redis().hget(keys.leases, otherMember))).toBe("1");
    // Also the clock, the holds read, and the sole hold's lease (its key's TTL) written out.
    const acquired = await costOf(() => semaphore.acquire({ leaseMs: 20_000 }));
    expect(acquired).toMatchObject({ billed: 11, requests: 1 });
    const [seconds, micros] = await bed.redis().time();
    const now = Number(seconds) * 1000 + Number(micros) / 1000;
    const [permits, grant, end] = String(await bed.redis().hget(keys.leases, otherMember)).split(
      " ",
    );
    expect({ permits, grant }).toEqual({ permits: "1", grant: "-" });
    // Its lease is still the one it took: 10 s, a little of it gone.
    expect(Number(end) - now).toBeGreaterThan(8_000);
    expect(Number(end) - now).toBeLessThanOrEqual(10_000);
    // The key lives as long as the longer lease.
    expect(await bed.redis().pttl(keys.leases)).toBeGreaterThan(18_000);
    // The once sole hold's release, now beside another, reads the clock and all the holds: 7.
    const released = await costOf(() => other.release());
    expect(released).toMatchObject({ billed: 7, requests: 1 });
    expect(await semaphore.state()).toMatchObject({ held: 1, holds: 1 });
    await acquired.result.release();
  });

  it("a busy single attempt with nobody queued costs 8: it reads no queue and leaves none", async () => {
    const prefix = freshPrefix();
    const held = await (await semaphoreOf("busy", 1, prefix)).acquire({ leaseMs: 10_000 });
    const attempt = await costOf(() =>
      bed.client({ prefix }).semaphore("busy").tryAcquire({ leaseMs: 10_000 }),
    );
    expect(attempt.result).toBeNull();
    expect(attempt).toMatchObject({ billed: 8, requests: 1 });
    await held.release();
  });

  it("a hold whose grant the server did not record teaches waiters nothing; one granted while somebody waited does", async () => {
    const prefix = freshPrefix();
    const redis = bed.redis();
    const keys = semaphoreKeys(prefix, "taught");
    const semaphore = await semaphoreOf("taught", 1, prefix);
    const alone = await semaphore.acquire({ leaseMs: 10_000 });
    await sleepMs(100);
    await alone.release();
    // Nobody waited: the release ran no statistics (and no hand-off).
    expect(await redis.hget(keys.pace, "hold")).toBeNull();
    // Taken by the fast path (no clock): its start is unknown, even to a release with waiters.
    const first = await semaphore.acquire({ leaseMs: 10_000 });
    const waiter = (n: number) =>
      bed
        .client({ prefix })
        .semaphore("taught")
        .acquire({ leaseMs: 10_000, waitMs: 10_000, wait: { mode: "poll" } })
        .then((handle) => ({ n, handle }));
    const one = waiter(1);
    while ((await semaphore.state()).waiters < 1) await sleepMs(10);
    const two = waiter(2);
    while ((await semaphore.state()).waiters < 2) await sleepMs(10);
    await first.release();
    expect(await redis.hget(keys.pace, "hold")).toBeNull();
    // The next hold is taken beside a queue, by a script that reads the clock: released while
    // the other waiter waits, its length (at least the 100 ms slept) is learnt.
    const next = await Promise.race([one, two]);
    await sleepMs(100);
    await next.handle.release();
    // waiters pace by it.
    expect(Number(await redis.hget(keys.pace, "hold"))).toBeGreaterThanOrEqual(100);
    expect(await redis.pttl(keys.pace)).toBeGreaterThan(PACE_TTL_MS - 60_000);
    await (await (next.n === 1 ? two : one)).handle.release();
  });

  it("a queued waiter's poll reads the queue once: joining costs 17, each poll after 14", async () => {
    const prefix = freshPrefix();
    const keys = semaphoreKeys(prefix, "queued");
    const held = await (await semaphoreOf("queued", 1, prefix)).acquire({ leaseMs: 10_000 });
    /** One polling attempt of acquisition `id`, as the library sends it (5 s place). */
    const poll = (id: string) => {
      const byName: Record<string, string> = {
        capacityKey: keys.capacity,
        leasesKey: keys.leases,
        fenceKey: keys.fence,
        queueKey: keys.queue,
        timeoutsKey: keys.timeouts,
        operationKey: keys.operation(id),
        paceKey: keys.pace,
        parkedKey: keys.parked,
      };
      const args: Record<string, string> = {
        owner: `owner-${id}`,
        permits: "1",
        leaseMs: "10000",
        operationTtlMs: "60000",
        waiterTimeoutMs: "5000",
        waiter: waiterMember(`owner-${id}`, id, 1),
        initialPermits: "-1",
        claimMs: "0",
        parkId: id,
        wakeBy: "",
      };
      return costOf(async () => {
        const reply = (await bed.redis().eval(
          SEMAPHORE_ACQUIRE.keyLocking.source,
          SEMAPHORE_ACQUIRE.keyNames.map((key) => byName[key] ?? ""),
          SEMAPHORE_ACQUIRE.argNames.map((arg) => args[arg] ?? ""),
        )) as number[];
        return reply.map(Number);
      });
    };
    const [first, second] = [newOperationId(), newOperationId()];
    const joined = await poll(first);
    // Busy, at the head (position 0), one live waiter.
    expect(joined.result.slice(0, 1).concat(joined.result.slice(2, 5))).toEqual([0, 0, 0, 1]);
    const behind = await poll(second);
    expect(behind.result.slice(0, 1).concat(behind.result.slice(2, 5))).toEqual([0, 1, 0, 2]);
    const again = await poll(first);
    expect(again.result.slice(0, 1).concat(again.result.slice(2, 5))).toEqual([0, 0, 0, 2]);
    // Before the fast path: 23 and 20 (the EXISTS it adds is paid back by one read of the queue
    // instead of its rank, those ahead and its length); 18 and 20 before the holds became one
    // hash (one HGETALL for the leases' pruning, the permits held and the soonest lease end);
    // 18 and 18 before a poller stopped dropping a parked registration it never had and a
    // waiter in place stopped reading its score before its rank; 17 and 16 before the queue's and
    // the deadlines' TTLs were lengthened by one PEXPIRE GT each, not PTTL then PEXPIRE (joining
    // makes both keys, so it pays GT and NX there, as many as before).
    expect({ joined: joined.billed, again: again.billed }).toEqual({ joined: 17, again: 14 });
    await held.release();
  });

  describe("a release sent as the library sends it", () => {
    /** Runs semaphore.release for `hold` under operation `operationId`; its reply's status. */
    async function release(prefix: string, name: string, hold: string, operationId: string) {
      const keys = semaphoreKeys(prefix, name);
      const byName: Record<string, string | undefined> = {
        leasesKey: keys.leases,
        operationKey: keys.operation(operationId),
        paceKey: keys.pace,
        capacityKey: keys.capacity,
        ...permitHandOffKeys(keys),
      };
      const reply = (await bed.redis().eval(
        SEMAPHORE_RELEASE.keyLocking.source,
        SEMAPHORE_RELEASE.keyNames.map((key) => byName[key] ?? ""),
        [hold, "60000", String(PACE_TTL_MS), ""],
      )) as number[];
      return reply[0];
    }

    it("reports a hold whose lease passed (not pruned yet) gone, every time it is sent", async () => {
      const prefix = freshPrefix();
      const semaphore = await semaphoreOf("lapsed", 2, prefix);
      const short = await bed.client({ prefix }).semaphore("lapsed").acquire({ leaseMs: 200 });
      // A longer hold keeps the leases key alive, so the short hold stays listed, unpruned.
      const long = await semaphore.acquire({ leaseMs: 10_000 });
      await sleepMs(400);
      const hold = `${short.owner} ${short.fencingToken}`;
      expect(await bed.redis().hget(semaphoreKeys(prefix, "lapsed").leases, hold)).not.toBeNull();
      const id = newOperationId();
      expect(await release(prefix, "lapsed", hold, id)).toBe(0);
      expect(await release(prefix, "lapsed", hold, id)).toBe(0);
      expect(await semaphore.state()).toMatchObject({ held: 1, holds: 1 });
      await long.release();
    });

    it("replays a re-sent release of a live hold as released", async () => {
      const prefix = freshPrefix();
      const semaphore = await semaphoreOf("resent-release", 1, prefix);
      const held = await semaphore.acquire({ leaseMs: 10_000 });
      const hold = `${held.owner} ${held.fencingToken}`;
      const id = newOperationId();
      expect(await release(prefix, "resent-release", hold, id)).toBe(1);
      expect(await release(prefix, "resent-release", hold, id)).toBe(1);
      // A new release (another operation) finds the hold gone.
      expect(await release(prefix, "resent-release", hold, newOperationId())).toBe(0);
      expect(await semaphore.state()).toMatchObject({ held: 0, holds: 0 });
    });
  });
});

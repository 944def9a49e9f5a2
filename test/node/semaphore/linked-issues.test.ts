/**
 * Each bug the semaphores of Redisson and redis-semaphore had, as a case that shows edgelock's
 * semaphore does not have it: crashed holders' permits return (redisson#4462, #2045), a head
 * waiting for several permits is not starved by later small waiters (redisson#6664), trySetPermits
 * does not double a capacity whose permits are all taken (redisson#4678), expired holds are
 * cleaned up (redisson#4100), an expired permit is not silently re-acquired by a renewal
 * (redis-semaphore#175), a release racing a renewal is not reported lost (redis-semaphore#205),
 * and leases run on the server's clock, whatever the client's says (redis-semaphore#24).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { LockClient, type PermitHandle } from "../../../src/index.js";
import { semaphoreKeys } from "../../../src/locks/semaphore/keys.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, until, useTestBed } from "../exclusive/testbed.js";
import { crashingAfter, pausedAfter } from "../fair-lock/support.js";
import { gate, intercepting } from "./support.js";

describe.each(backendKindsUnderTest())("semaphore linked issues on %s", (kind) => {
  const bed = useTestBed(kind);
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("returns a crashed watchdog holder's permits within its lease (redisson#4462, #2045)", async () => {
    const prefix = freshPrefix();
    // The holder's isolate dies right after acquiring: no renewal, no release ever comes.
    const crashed = new LockClient({
      redis: crashingAfter(bed.redis(), 1),
      prefix,
      retries: 0,
      watchdogTimeoutMs: 500,
    });
    const other = bed.client({ prefix }).semaphore("crash", { initialPermits: 3 });
    // A long hold beside it keeps the semaphore's keys alive: the crashed hold must go alone.
    const beside = await other.acquire({ leaseMs: 20_000 });
    await crashed.semaphore("crash").acquire({ permits: 2 });
    expect(await other.availablePermits()).toBe(0);
    const started = Date.now();
    const permit = await other.acquire({ permits: 2, waitMs: 5_000, leaseMs: 5_000 });
    expect(Date.now() - started).toBeLessThan(2_000);
    await permit.release();
    await beside.release();
  });

  it("serves a head waiting for several permits before later small waiters (redisson#6664)", async () => {
    const prefix = freshPrefix();
    const semaphore = bed.client({ prefix }).semaphore("head", { initialPermits: 2 });
    const first = await semaphore.acquire({ leaseMs: 20_000 });
    const second = await semaphore.acquire({ leaseMs: 20_000 });
    const order: string[] = [];
    const big = bed
      .client({ prefix, wait: { maxPolls: 10_000 } })
      .semaphore("head")
      .acquire({ permits: 2, waitMs: 20_000, leaseMs: 20_000 })
      .then((held) => {
        order.push("big");
        return held;
      });
    await until(async () => (await semaphore.state()).waiters === 1);
    const small = bed
      .client({ prefix, wait: { maxPolls: 10_000 } })
      .semaphore("head")
      .acquire({ permits: 1, waitMs: 20_000, leaseMs: 20_000 })
      .then((held) => {
        order.push("small");
        return held;
      });
    await until(async () => (await semaphore.state()).waiters === 2);
    // One permit comes free: the small waiter could use it, but it is the head's.
    await first.release();
    await sleepMs(400);
    expect(order).toEqual([]);
    expect(await semaphore.tryAcquire({ leaseMs: 1_000 })).toBeNull();
    await second.release();
    const bigHeld = await big;
    expect(order).toEqual(["big"]);
    await bigHeld.release();
    await (await small).release();
    expect(order).toEqual(["big", "small"]);
  });

  it("does not change a capacity whose permits are all taken (redisson#4678)", async () => {
    const semaphore = bed.client().semaphore("try-set");
    expect(await semaphore.trySetPermits(2)).toBe(true);
    const held = await semaphore.acquire({ permits: 2, leaseMs: 10_000 });
    expect(await semaphore.availablePermits()).toBe(0);
    expect(await semaphore.trySetPermits(2)).toBe(false);
    await held.release();
    expect(await semaphore.state()).toMatchObject({ capacity: 2, available: 2 });
  });

  it("cleans up expired holds, and its keys vanish with the last lease (redisson#4100)", async () => {
    const prefix = freshPrefix();
    const redis = bed.redis();
    const keys = semaphoreKeys(prefix, "cleaned");
    const semaphore = bed.client({ prefix }).semaphore("cleaned", { initialPermits: 5 });
    for (let i = 0; i < 3; i++) await semaphore.acquire({ leaseMs: 200 });
    const live = await semaphore.acquire({ leaseMs: 1_500 });
    await sleepMs(300);
    // The next script prunes every expired hold, whoever runs it.
    await (await semaphore.acquire({ leaseMs: 200 })).release();
    expect(await redis.hlen(keys.leases)).toBe(1);
    await sleepMs(1_400);
    // The last lease passed: nothing is left but the capacity and the fence counter.
    expect(live.signal.aborted).toBe(true);
    expect(await redis.exists(keys.leases)).toBe(0);
  });

  it("does not re-acquire an expired permit on renewal (redis-semaphore#175)", async () => {
    const prefix = freshPrefix();
    // The holder's isolate stalls after acquiring (a long GC, a frozen tab): its renewal waits.
    const paused = pausedAfter(bed.redis(), 1);
    const stalled = new LockClient({ redis: paused.redis, prefix, watchdogTimeoutMs: 600 });
    const lost: string[] = [];
    stalled.on("lockLost", (event) => lost.push(event.reason));
    const held = await stalled.semaphore("stall", { initialPermits: 1 }).acquire();
    const other = bed.client({ prefix }).semaphore("stall");
    const taken = await other.acquire({ waitMs: 5_000, leaseMs: 10_000 });
    // The stalled holder wakes up: its renewal arrives after the permit went to another.
    paused.open();
    await until(() => lost.length > 0);
    expect(held.signal.aborted).toBe(true);
    await sleepMs(200);
    // The renewal did not take the permit again: one hold, within the capacity.
    expect(await other.state()).toMatchObject({ capacity: 1, held: 1, holds: 1 });
    await taken.release();
  });

  it("does not report a release that races a renewal as lost (redis-semaphore#205)", async () => {
    const renewalSent = gate();
    const releaseRan = gate();
    let racing = false;
    const redis = intercepting(bed.redis(), async (call, send) => {
      if (!racing) return send();
      if (call === "renew") {
        // The renewal reaches Redis just after the release and answers before it does.
        renewalSent.open();
        await releaseRan.opened;
        return send();
      }
      if (call === "release") {
        const answer = await send();
        releaseRan.open();
        await sleepMs(300);
        return answer;
      }
      return send();
    });
    const client = bed.client({ redis, watchdogTimeoutMs: 600 });
    const lost: string[] = [];
    client.on("lockLost", (event) => lost.push(event.reason));
    const held: PermitHandle = await client.semaphore("race", { initialPermits: 1 }).acquire();
    racing = true;
    await renewalSent.opened;
    await held.release();
    await sleepMs(100);
    expect(lost).toEqual([]);
    expect(held.signal.aborted).toBe(false);
    expect(held.released).toBe(true);
  });

  it("runs leases on the server's clock, whatever the client's (redis-semaphore#24)", async () => {
    const prefix = freshPrefix();
    const semaphore = bed.client({ prefix }).semaphore("clock", { initialPermits: 1 });
    const realNow = Date.now.bind(Date);
    // A client whose clock is an hour behind (standby, a wrong NTP) takes a 5 s lease...
    vi.spyOn(Date, "now").mockImplementation(() => realNow() - 3_600_000);
    const behind = await semaphore.acquire({ leaseMs: 5_000 });
    vi.restoreAllMocks();
    // ...which is not expired for the others: nobody holds more than the capacity.
    expect(await bed.client({ prefix }).semaphore("clock").tryAcquire()).toBeNull();
    await behind.release();
    // A client an hour ahead takes a 400 ms lease: it ends after 400 ms of server time.
    vi.spyOn(Date, "now").mockImplementation(() => realNow() + 3_600_000);
    await bed.client({ prefix }).semaphore("clock").acquire({ leaseMs: 400 });
    vi.restoreAllMocks();
    await sleepMs(500);
    const next = await semaphore.tryAcquire({ leaseMs: 1_000 });
    expect(next).not.toBeNull();
    await next?.release();
  });
});

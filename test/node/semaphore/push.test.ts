/**
 * Push hand-off for permits (issue 33) over the semaphore's hand-off channels, on the `upstash`
 * profile (key-locking flag, no blocking pops): a waiter subscribes, registers as parked, and
 * whatever returns permits (a release, a waiter leaving, a capacity raised) grants them in the
 * same script to parked waiters first come first served, as many as the permits cover, and
 * announces each grant. The real @upstash/redis client; words are lost or delayed on the
 * client's side only, so the server's decisions stay real.
 */
import { describe, expect, it } from "vitest";
import { LockAbortedError, type PermitHandle, SemaphoreCapacityError } from "../../../src/index.js";
import { attemptPermits, SEMAPHORE_ACQUIRE } from "../../../src/locks/semaphore/acquire.js";
import { extendPermits } from "../../../src/locks/semaphore/extend.js";
import { permitParkBoundMs } from "../../../src/locks/semaphore/hand-off.js";
import { semaphoreKeys } from "../../../src/locks/semaphore/keys.js";
import { newOperationId } from "../../../src/platform.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { scriptContext } from "../../support/model.js";
import { tapped } from "../../support/tapped-redis.js";
import { freshPrefix, sleepMs, type TestBed, until, useTestBed } from "../exclusive/testbed.js";
import { leaseEndOf } from "./support.js";

/** Waiters registered in the semaphore's parked hash as listening on a channel. */
async function parkedWaiters(bed: TestBed, prefix: string, name = "pool"): Promise<number> {
  const parked = await bed
    .redis()
    .hgetall<Record<string, string>>(semaphoreKeys(prefix, name).parked);
  return Object.values(parked ?? {}).filter((value) => / sub\d+\.\d+$/.test(String(value))).length;
}

/** Acquire scripts a client sent: semaphore.acquire's keys start with the capacity. */
function acquireScripts(sent: readonly { keys: string[] }[]): number {
  return sent.filter(
    ({ keys }) =>
      keys[0]?.endsWith(":semaphore:capacity") && keys.length === SEMAPHORE_ACQUIRE.keyNames.length,
  ).length;
}

describe.each(backendKindsUnderTest())("semaphore push hand-off on %s", (backend) => {
  const bed = useTestBed(backend, { profile: "upstash" });

  /** An admin client (holds, capacity) and `n` push-mode waiting clients, on one prefix. */
  function clients(n: number, wait: { parkMs?: number; claimMs?: number } = {}) {
    const prefix = freshPrefix();
    const admin = bed.client({ prefix, scriptKeyLocking: true });
    const waiters = Array.from({ length: n }, () => {
      const { redis, tap } = tapped(bed.redis());
      const client = bed.client({
        prefix,
        redis,
        scriptKeyLocking: true,
        wait: { mode: "push", wakeBy: "subscription", ...wait },
      });
      return { semaphore: client.semaphore("pool"), tap };
    });
    return { prefix, semaphore: admin.semaphore("pool"), waiters };
  }

  it("a release's word hands its permits to the parked waiter, which asks no more", async () => {
    const { prefix, semaphore, waiters } = clients(1);
    const [waiter] = waiters;
    await semaphore.trySetPermits(2);
    const held = await semaphore.acquire({ permits: 2, leaseMs: 20_000 });
    const waiting = waiter!.semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    await sleepMs(300); // a polling waiter would have asked again by now; a parked one waits
    const attemptsBefore = acquireScripts(waiter!.tap.sent);
    const releasedAt = Date.now();
    await held.release();
    const handle = await waiting;
    expect(Date.now() - releasedAt).toBeLessThan(1_000);
    expect(handle.fencingToken).toBeGreaterThan(held.fencingToken);
    expect(waiter!.tap.words).toBeGreaterThanOrEqual(1);
    // Told, not polled: no attempt after the registering one; the word brought the permits.
    expect(acquireScripts(waiter!.tap.sent)).toBe(attemptsBefore);
    expect(await semaphore.state()).toMatchObject({ held: 1, holds: 1, waiters: 0 });
    const keys = semaphoreKeys(prefix, "pool");
    expect(Object.values((await bed.redis().hgetall(keys.parked)) ?? {}).map(String)).toEqual([
      expect.stringMatching(new RegExp(`^granted ${handle.fencingToken} \\d+$`)),
    ]);
    await handle.release();
    expect(await semaphore.availablePermits()).toBe(2);
    // The release cleared the grant's record: the acquisition's operation record answers a late
    // copy of its attempts now.
    expect(await bed.redis().exists(keys.parked)).toBe(0);
  });

  it("one release grants as many queued waiters as its permits cover, first come first served", async () => {
    const { prefix, semaphore, waiters } = clients(3);
    await semaphore.trySetPermits(3);
    const held = await semaphore.acquire({ permits: 3, leaseMs: 20_000 });
    const order: string[] = [];
    const wait = (index: number, permits: number) =>
      waiters[index]!.semaphore.acquire({ permits, leaseMs: 10_000, waitMs: 20_000 }).then(
        (handle) => {
          order.push(`${index}`);
          return handle;
        },
      );
    // In this order: one permit, one permit, then two.
    const first = wait(0, 1);
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    const second = wait(1, 1);
    await until(async () => (await parkedWaiters(bed, prefix)) === 2);
    const third = wait(2, 2);
    await until(async () => (await parkedWaiters(bed, prefix)) === 3);
    const attemptsBefore = waiters.map(({ tap }) => acquireScripts(tap.sent));
    await held.release();
    const [a, b] = await Promise.all([first, second]);
    // The two permits went to the first two; the third waiter's two do not fit beside them.
    expect(await semaphore.state()).toMatchObject({ held: 2, holds: 2, waiters: 1 });
    expect(order).toEqual(expect.arrayContaining(["0", "1"]));
    expect(order).toHaveLength(2);
    await a!.release();
    const c = await third;
    expect(order[2]).toBe("2");
    expect(await semaphore.state()).toMatchObject({ held: 3, holds: 2, waiters: 0 });
    expect(waiters.map(({ tap }) => acquireScripts(tap.sent))).toEqual(attemptsBefore);
    await Promise.all([b!.release(), c.release()]);
    expect(await semaphore.availablePermits()).toBe(3);
  });

  it("a parked waiter for three at the head is not overtaken by a later one for one", async () => {
    const { prefix, semaphore, waiters } = clients(2);
    await semaphore.trySetPermits(3);
    const two = await semaphore.acquire({ permits: 2, leaseMs: 20_000 });
    const one = await semaphore.acquire({ leaseMs: 20_000 });
    const order: string[] = [];
    const forAll = waiters[0]!.semaphore.acquire({ permits: 3, leaseMs: 10_000, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    const forOne = waiters[1]!.semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 2);
    void forAll.then(() => order.push("three"));
    void forOne.then(() => order.push("one"));
    // Two permits back: the head needs three, so they stay reserved for it, not for the later one.
    await two.release();
    await sleepMs(300);
    expect(order).toEqual([]);
    expect(await semaphore.state()).toMatchObject({ held: 1, waiters: 2 });
    await one.release();
    const all = await forAll;
    expect(order).toEqual(["three"]);
    await all.release();
    await (await forOne).release();
    expect(order).toEqual(["three", "one"]);
  });

  it("permits a capacity raise frees go to a parked waiter by word", async () => {
    const { prefix, semaphore, waiters } = clients(1);
    await semaphore.trySetPermits(1);
    const held = await semaphore.acquire({ leaseMs: 20_000 });
    const waiting = waiters[0]!.semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    const attemptsBefore = acquireScripts(waiters[0]!.tap.sent);
    const raisedAt = Date.now();
    expect(await semaphore.addPermits(1)).toBe(2);
    const handle = await waiting;
    expect(Date.now() - raisedAt).toBeLessThan(1_000);
    expect(acquireScripts(waiters[0]!.tap.sent)).toBe(attemptsBefore);
    await Promise.all([handle.release(), held.release()]);
  });

  it("a lost word: the waiter's next attempt replays the grant, holding its permits once", async () => {
    const { prefix, semaphore, waiters } = clients(1, { parkMs: 500, claimMs: 5_000 });
    const { tap } = waiters[0]!;
    await semaphore.trySetPermits(1);
    const held = await semaphore.acquire({ leaseMs: 20_000 });
    tap.dropWords = true;
    const waiting = waiters[0]!.semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    await held.release();
    const handle = await waiting;
    expect(tap.words).toBeGreaterThanOrEqual(1);
    // The hold the release granted (the next token), not a second one beside it.
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    expect(await semaphore.state()).toMatchObject({ held: 1, holds: 1 });
    await handle.release();
    expect(await semaphore.availablePermits()).toBe(1);
  });

  it("a lost word keeps the waiter's turn: it asks again within the claim window and replays its grant before the waiter behind", async () => {
    // Issue 41, case 2: the park outlasted the grant (parkMs 5 s, a 2 s claim window): the
    // grant lapsed unheard and the waiter took a new hold, with a new token, seconds later.
    const claimMs = 2_000;
    const { prefix, semaphore, waiters } = clients(2, { claimMs, parkMs: 5_000 });
    const [deaf, next] = waiters;
    await semaphore.trySetPermits(1);
    const held = await semaphore.acquire({ leaseMs: 20_000 });
    deaf!.tap.dropWords = true;
    const order: string[] = [];
    const first = deaf!.semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 }).then((handle) => {
      order.push("first");
      return handle;
    });
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    const second = next!.semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 }).then((handle) => {
      order.push("second");
      return handle;
    });
    await until(async () => (await parkedWaiters(bed, prefix)) === 2);
    const releasedAt = Date.now();
    await held.release(); // granted to the deaf waiter, its word lost
    const handle = await first;
    const heldAfterMs = Date.now() - releasedAt;
    expect(deaf!.tap.words).toBeGreaterThanOrEqual(1);
    // The hold the release granted (the next token), replayed within its claim window, first.
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    expect(heldAfterMs).toBeLessThan(claimMs);
    expect(order).toEqual(["first"]);
    expect(await semaphore.state()).toMatchObject({ held: 1, holds: 1, waiters: 1 });
    await handle.release();
    const after = await second;
    expect(order).toEqual(["first", "second"]);
    expect(after.fencingToken).toBe(handle.fencingToken + 1);
    await after.release();
  });

  it("a grant heard past its window leaves the answer of the attempt in flight, which replayed it, to decide", async () => {
    // The chaos run's 'a grant to a live waiter is the hold it gets' (semaphore-sub): in a
    // latency spike the grant's word came past its claim window while the attempt sent at the
    // park's end (which had replayed the grant, re-arming its lease) was still unanswered; the
    // waiter threw that answer away for the stale word and asked again once the re-armed lease
    // had lapsed: a new hold, a new token, its place lost.
    const claimMs = 2_000;
    const leaseMs = 1_000; // the grant's lease, its park's bound 750 ms (GRANT_PARK_SHARE)
    const answerDelayMs = 3_000;
    const prefix = freshPrefix();
    const semaphore = bed.client({ prefix, scriptKeyLocking: true }).semaphore("pool");
    const { redis: tappedRedis, tap } = tapped(bed.redis());
    // The next `slowAnswers` acquire scripts run at once but are answered `answerDelayMs` late.
    let slowAnswers = 0;
    const late = <T>(reply: Promise<T>, keys: string[]): Promise<T> => {
      if (
        !(
          keys[0]?.endsWith(":semaphore:capacity") &&
          keys.length === SEMAPHORE_ACQUIRE.keyNames.length
        ) ||
        slowAnswers === 0
      ) {
        return reply;
      }
      slowAnswers -= 1;
      return reply.then((value) => sleepMs(answerDelayMs).then(() => value));
    };
    const redis: typeof tappedRedis = {
      ...tappedRedis,
      eval: (script, keys, args) => late(tappedRedis.eval(script, keys, args), keys),
      evalsha: (sha, keys, args) => late(tappedRedis.evalsha(sha, keys, args), keys),
    };
    const waiter = bed
      .client({
        prefix,
        redis,
        scriptKeyLocking: true,
        // Room for the slow answer: it is an answer, not a failure.
        backendTimeoutMs: 10_000,
        wait: { mode: "push", wakeBy: "subscription", claimMs },
      })
      .semaphore("pool");
    await semaphore.trySetPermits(1);
    const held = await semaphore.acquire({ leaseMs: 20_000 });
    const waiting = waiter.acquire({ leaseMs, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    tap.delayMs = 2_500; // the word comes well past the grant's 1 s lease
    slowAnswers = 1; // the attempt at the park's end (within the grant's lease) replays it
    await held.release();
    const handle = await waiting;
    // The hold the release granted (the next token), not a new one taken after it lapsed.
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    expect(slowAnswers).toBe(0);
    await handle.release().catch(() => {});
  });

  it("a registration records when the park ends, by the bound the waiter parks by", async () => {
    const { prefix, semaphore, waiters } = clients(3, { claimMs: 2_000, parkMs: 5_000 });
    await semaphore.trySetPermits(1);
    const held = await semaphore.acquire({ leaseMs: 20_000 });
    const cancel = new AbortController();
    const waits = [10_000, 10_000, 1_000].map((leaseMs, index) =>
      waiters[index]!.semaphore.acquire({ leaseMs, waitMs: 20_000, signal: cancel.signal }),
    );
    for (const wait of waits) wait.catch(() => {});
    await until(async () => (await parkedWaiters(bed, prefix)) === 3);
    const parked = await bed
      .redis()
      .hgetall<Record<string, string>>(semaphoreKeys(prefix, "pool").parked);
    const parkFor = Object.values(parked ?? {})
      .map((registration) => String(registration).split(" "))
      .map(([, leaseMs, , since, parkEnd]) => ({
        leaseMs: Number(leaseMs),
        ms: Number(parkEnd) - Number(since),
      }))
      .sort((a, b) => b.leaseMs - a.leaseMs);
    // Three quarters of the grant's lease (the claim window, or the waiter's own if shorter),
    // whatever the place: the holder's lease (20 s) ends later.
    expect(parkFor).toEqual([
      { leaseMs: 10_000, ms: permitParkBoundMs(20_000, 0, 2_000, 10_000) },
      { leaseMs: 10_000, ms: permitParkBoundMs(20_000, 1, 2_000, 10_000) },
      { leaseMs: 1_000, ms: permitParkBoundMs(20_000, 2, 2_000, 1_000) },
    ]);
    expect(parkFor.map(({ ms }) => ms)).toEqual([1_500, 1_500, 750]);
    cancel.abort();
    await Promise.allSettled(waits);
    await held.release();
  });

  it("the waiter behind a grantee that died is told when that grant's shorter lease lapses", async () => {
    // The grant's lease is the grantee's own (1 s), shorter than the claim window: the waiter
    // behind, whose park would end later, is told `behind 1000` and takes the permit then.
    const claimMs = 5_000;
    const { prefix, semaphore, waiters } = clients(2, { claimMs, parkMs: 10_000 });
    const [dying, next] = waiters;
    await semaphore.trySetPermits(1);
    const held = await semaphore.acquire({ leaseMs: 20_000 });
    void dying!.semaphore.acquire({ leaseMs: 1_000, waitMs: 20_000 }).catch(() => {});
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    dying!.tap.dead = true; // the grantee's process dies: it never confirms its grant
    dying!.tap.dropWords = true;
    const waiting = next!.semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 2);
    const releasedAt = Date.now();
    await held.release();
    const handle = await waiting;
    const tookMs = Date.now() - releasedAt;
    expect(tookMs).toBeGreaterThanOrEqual(1_000 - 50);
    expect(tookMs).toBeLessThan(2_000);
    expect(next!.tap.words).toBeGreaterThanOrEqual(1); // its `behind`
    await handle.release();
  });

  it("a shrink tells a parked waiter that can no longer fit at once, and the release grants the waiter behind it", async () => {
    // Issue 41, case 3: the waiter for 3 learnt only when its park ended (seconds), and its
    // reservation of 3 held the freed permits back from the waiter for 1 behind it.
    const { prefix, semaphore, waiters } = clients(2, { claimMs: 10_000, parkMs: 10_000 });
    const [forThree, forOne] = waiters;
    await semaphore.trySetPermits(3);
    const held = await semaphore.acquire({ permits: 3, leaseMs: 20_000 });
    const tooMany = forThree!.semaphore.acquire({ permits: 3, leaseMs: 10_000, waitMs: 20_000 });
    const refused = tooMany.then(
      () => undefined,
      (error: unknown) => ({ error, at: Date.now() }),
    );
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    const waiting = forOne!.semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 2);
    const shrunkAt = Date.now();
    await semaphore.setPermits(2);
    const outcome = await refused;
    expect(outcome?.error).toBeInstanceOf(SemaphoreCapacityError);
    expect(outcome!.at - shrunkAt).toBeLessThan(1_000);
    const releasedAt = Date.now();
    await held.release();
    const handle = await waiting;
    expect(Date.now() - releasedAt).toBeLessThan(1_000);
    expect(await semaphore.state()).toMatchObject({ capacity: 2, held: 1, waiters: 0 });
    await handle.release();
  });

  it("a waiter that can no longer fit reserves nothing: the release grants the one behind it by word", async () => {
    // The waiter for 3 does not hear the shrink (its words are lost) and still waits when the
    // release comes (its park lasts 3 s: three quarters of the claim window): the grant walk
    // skips it instead of keeping 3 of 2 permits for it.
    const { prefix, semaphore, waiters } = clients(2, { claimMs: 4_000, parkMs: 10_000 });
    const [forThree, forOne] = waiters;
    await semaphore.trySetPermits(3);
    const held = await semaphore.acquire({ permits: 3, leaseMs: 20_000 });
    forThree!.tap.dropWords = true;
    const tooMany = forThree!.semaphore.acquire({ permits: 3, leaseMs: 10_000, waitMs: 20_000 });
    tooMany.catch(() => {});
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    const waiting = forOne!.semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 2);
    const attemptsBefore = acquireScripts(forOne!.tap.sent);
    await semaphore.setPermits(2);
    const releasedAt = Date.now();
    await held.release();
    const handle = await waiting;
    expect(Date.now() - releasedAt).toBeLessThan(1_000);
    expect(acquireScripts(forOne!.tap.sent)).toBe(attemptsBefore); // by word, not by asking
    await expect(tooMany).rejects.toBeInstanceOf(SemaphoreCapacityError);
    await handle.release();
  });

  it("a polling waiter behind one that can no longer fit takes the permits the release freed", async () => {
    // The acquire script reserves nothing for it either (its park, unheard, lasts 3 s).
    const { prefix, semaphore, waiters } = clients(1, { claimMs: 4_000, parkMs: 10_000 });
    const [forThree] = waiters;
    await semaphore.trySetPermits(3);
    const held = await semaphore.acquire({ permits: 3, leaseMs: 20_000 });
    forThree!.tap.dropWords = true;
    const tooMany = forThree!.semaphore.acquire({ permits: 3, leaseMs: 10_000, waitMs: 20_000 });
    tooMany.catch(() => {});
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    await semaphore.setPermits(2);
    const polling = semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 });
    await until(async () => (await semaphore.state()).waiters === 2);
    const releasedAt = Date.now();
    await held.release();
    const handle = await polling;
    expect(Date.now() - releasedAt).toBeLessThan(1_000);
    await expect(tooMany).rejects.toBeInstanceOf(SemaphoreCapacityError);
    await handle.release();
  });

  it("a waiter that gives up after a grant it never heard returns the permits to the next", async () => {
    const { prefix, semaphore, waiters } = clients(2, { parkMs: 60_000, claimMs: 15_000 });
    const [deaf, next] = waiters;
    await semaphore.trySetPermits(1);
    const held = await semaphore.acquire({ leaseMs: 20_000 });
    deaf!.tap.dropWords = true;
    const cancel = new AbortController();
    const giving = deaf!.semaphore.acquire({
      leaseMs: 10_000,
      waitMs: 20_000,
      signal: cancel.signal,
    });
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    const waiting = next!.semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 2);
    await held.release(); // granted to the deaf waiter with a 15 s claim window; its word lost
    await until(async () => deaf!.tap.words >= 1);
    const abortedAt = Date.now();
    cancel.abort();
    await expect(giving).rejects.toBeInstanceOf(LockAbortedError);
    // Its leave found the grant, returned it, and granted the waiter behind: long before 15 s.
    const handle: PermitHandle = await waiting;
    expect(Date.now() - abortedAt).toBeLessThan(2_000);
    expect(await semaphore.state()).toMatchObject({ held: 1, holds: 1, waiters: 0 });
    await handle.release();
  });

  it("a grantee that died before claiming: its permits come back when the claim window ends", async () => {
    const claimMs = 1_000;
    const { prefix, semaphore, waiters } = clients(1, { claimMs, parkMs: 30_000 });
    const { tap } = waiters[0]!;
    await semaphore.trySetPermits(1);
    const held = await semaphore.acquire({ leaseMs: 20_000 });
    void waiters[0]!.semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 }).catch(() => {});
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    tap.dead = true; // the grantee's process dies: it never confirms the grant
    tap.dropWords = true;
    const releasedAt = Date.now();
    await held.release();
    expect(await semaphore.availablePermits()).toBe(0); // granted, for the claim window only
    const keys = semaphoreKeys(prefix, "pool");
    expect(Object.values((await bed.redis().hgetall(keys.parked)) ?? {})).toHaveLength(1);
    const next = await semaphore.acquire({ leaseMs: 10_000, waitMs: 10_000 });
    expect(Date.now() - releasedAt).toBeGreaterThanOrEqual(claimMs - 50);
    expect(Date.now() - releasedAt).toBeLessThan(claimMs + 3_000);
    await next.release();
    // Nobody waits now: that release swept the parked hash, but the dead grantee's record is
    // younger than an operation record, so it stays for a late copy of its attempt to replay.
    const left = (await bed.redis().hgetall<Record<string, string>>(keys.parked)) ?? {};
    expect(Object.values(left).map(String)).toEqual([expect.stringMatching(/^granted \d+ \d+$/)]);
  });

  it("a release whose permits lapsed still clears its grant's record, into the acquisition's operation record", async () => {
    const { prefix, semaphore, waiters } = clients(1);
    await semaphore.trySetPermits(1);
    const held = await semaphore.acquire({ leaseMs: 20_000 });
    const waiting = waiters[0]!.semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    await held.release();
    const handle = await waiting; // granted by word
    const keys = semaphoreKeys(prefix, "pool");
    const [member] = Object.keys((await bed.redis().hgetall(keys.parked)) ?? {});
    const operationId = member?.split(" ")[1] ?? "";
    expect(operationId).not.toBe("");
    // The hold is gone before its release (its lease lapsed and a script pruned it).
    await bed.redis().hdel(keys.leases, `${handle.owner} ${handle.fencingToken}`);
    await expect(handle.release()).rejects.toThrow();
    // The record went all the same, and the acquisition's answer stays for a late copy.
    expect(await bed.redis().exists(keys.parked)).toBe(0);
    expect(Number(await bed.redis().get(keys.operation(operationId)))).toBe(handle.fencingToken);
  });

  it("a release's walk prunes a dead waiter it meets, not the whole queue: the live one behind gets the permits by word", async () => {
    const { prefix, semaphore, waiters } = clients(1);
    await semaphore.trySetPermits(1);
    const held = await semaphore.acquire({ leaseMs: 20_000 });
    const keys = semaphoreKeys(prefix, "pool");
    /** A polling waiter whose place lasts 200 ms: it asks once, then its process dies. */
    const dying = async (owner: string) => {
      const operationId = newOperationId();
      const answer = await attemptPermits(
        scriptContext(bed.redis()),
        keys,
        owner,
        1,
        5_000,
        operationId,
        {
          timeoutMs: 200,
          initialPermits: undefined,
        },
      );
      expect(answer.kind).toBe("busy");
      return `${owner} ${operationId} 1`;
    };
    const deadHead = await dying("dead-head");
    const waiting = waiters[0]!.semaphore.acquire({ leaseMs: 10_000, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    const deadBehind = await dying("dead-behind");
    await sleepMs(300); // both dead waiters' deadlines pass
    const releasedAt = Date.now();
    await held.release();
    const handle = await waiting;
    expect(Date.now() - releasedAt).toBeLessThan(1_000); // by word, past the dead head
    // The walk met the dead head (pruned) and stopped at the grant: the one behind stays until a
    // walk or an attempt meets it.
    expect(await bed.redis().zscore(keys.queue, deadHead)).toBeNull();
    expect(await bed.redis().zscore(keys.queue, deadBehind)).not.toBeNull();
    await handle.release();
    expect(await bed.redis().exists(keys.queue, keys.timeouts)).toBe(0);
  });

  it("a handed-off hold with a fixed lease confirms it past the claim window", async () => {
    const claimMs = 1_000;
    const { prefix, semaphore, waiters } = clients(1, { claimMs });
    await semaphore.trySetPermits(1);
    const held = await semaphore.acquire({ leaseMs: 20_000 });
    const waiting = waiters[0]!.semaphore.acquire({ leaseMs: 6_000, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    const attemptsBefore = acquireScripts(waiters[0]!.tap.sent);
    const releasedAt = Date.now();
    await held.release();
    const handle = await waiting;
    expect(acquireScripts(waiters[0]!.tap.sent)).toBe(attemptsBefore); // handed off, by word
    await sleepMs(claimMs + 1_000); // past the claim window
    expect(handle.signal.aborted).toBe(false);
    expect(handle.expiresAt - releasedAt).toBeGreaterThan(5_000);
    // The server's lease does not end before the one the handle trusts.
    const keys = semaphoreKeys(prefix, "pool");
    const member = `${handle.owner} ${handle.fencingToken}`;
    expect(await leaseEndOf(bed.redis(), keys.leases, member)).toBeGreaterThan(0);
    expect(await semaphore.state()).toMatchObject({ held: 1, holds: 1 });
    await handle.release();
  });

  it("a handed-off hold extended before its claim is confirmed keeps the extended lease on the server", async () => {
    // The chaos run's 'server holds every hold its client trusts' (semaphore-sub): an extend
    // inside the claim window, then the claim's confirmation, which re-armed the lease from the
    // grant and cut what the extend had promised (the client trusts the extend's answer when it
    // comes last).
    const claimMs = 1_000;
    const leaseMs = 3_000;
    const { prefix, semaphore, waiters } = clients(1, { claimMs });
    await semaphore.trySetPermits(1);
    const held = await semaphore.acquire({ leaseMs: 20_000 });
    const waiting = waiters[0]!.semaphore.acquire({ leaseMs, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    await held.release();
    const handle = await waiting;
    expect(handle.expiresAt - Date.now()).toBeLessThanOrEqual(claimMs); // a claim, pending
    await sleepMs(200); // the claim confirms at half its window: extend before that
    const extendedAt = Date.now();
    await handle.extend(leaseMs);
    await sleepMs(claimMs); // past the claim's confirmation
    expect(handle.signal.aborted).toBe(false);
    const keys = semaphoreKeys(prefix, "pool");
    const serverEnd = Number(
      await leaseEndOf(bed.redis(), keys.leases, `${handle.owner} ${handle.fencingToken}`),
    );
    // The extend re-armed the lease to 3 s from its send: a later claim does not shorten it.
    expect(serverEnd).toBeGreaterThanOrEqual(extendedAt + leaseMs);
    expect(serverEnd).toBeGreaterThanOrEqual(handle.expiresAt);
    await handle.release();
  });

  it("a handed-off hold extended to less than its claim window is trusted no longer than the server keeps it", async () => {
    // A short extend() inside the claim window left the server's lease inside the window too;
    // the claim's confirmation took it for the grant's untouched window and shifted it from
    // there (ending before grant + lease), while the handle trusted grant + lease.
    const claimMs = 1_000;
    const leaseMs = 3_000;
    const { prefix, semaphore, waiters } = clients(1, { claimMs });
    await semaphore.trySetPermits(1);
    const held = await semaphore.acquire({ leaseMs: 20_000 });
    const waiting = waiters[0]!.semaphore.acquire({ leaseMs, waitMs: 20_000 });
    await until(async () => (await parkedWaiters(bed, prefix)) === 1);
    await held.release();
    const handle = await waiting;
    expect(handle.expiresAt - Date.now()).toBeLessThanOrEqual(claimMs); // a claim, pending
    await sleepMs(100); // the claim confirms at half its window: extend before that
    await handle.extend(700); // ends inside the window, after the confirmation
    await sleepMs(claimMs / 2); // past the claim's confirmation
    const keys = semaphoreKeys(prefix, "pool");
    const serverEnd = Number(
      await leaseEndOf(bed.redis(), keys.leases, `${handle.owner} ${handle.fencingToken}`),
    );
    // Whatever the server keeps now, the handle trusts no moment past it.
    if (serverEnd > 0) expect(serverEnd).toBeGreaterThanOrEqual(handle.expiresAt);
    else expect(handle.signal.aborted).toBe(true);
    await handle.release().catch(() => undefined);
  });

  it("semaphore.extend anchors a claim at the grant: the lease ends exactly its length after it", async () => {
    const { prefix, semaphore } = clients(0);
    await semaphore.trySetPermits(2);
    // Beside another hold, as a grant is: its entry carries its lease's end.
    const other = await semaphore.acquire({ leaseMs: 20_000 });
    const held = await semaphore.acquire({ leaseMs: 1_000 }); // as a grant with a 1 s claim
    const keys = semaphoreKeys(prefix, "pool");
    const member = `${held.owner} ${held.fencingToken}`;
    const granted = Number(await leaseEndOf(bed.redis(), keys.leases, member));
    const renewed = await extendPermits(
      scriptContext(bed.redis()),
      keys,
      held.owner,
      held.fencingToken,
      5_000,
      { claimMs: 1_000, grantLeaseMs: 8_000 },
    );
    expect(renewed).toBe(true);
    // From the claim's end (grant + 1 s) to grant + 8 s, however late the request came.
    expect(await leaseEndOf(bed.redis(), keys.leases, member)).toBe(granted + 7_000);
    await held.release();
    await other.release();
  });
});

/**
 * What one contended cycle of a lock bills, step by step, with the scripts sent as the library
 * sends them (Upstash's key-locking form) over a subscription: a waiter joins the queue and parks,
 * polls again in place, the holder's release hands it the lock, and its next attempt takes the
 * announced grant. Counted in billed commands (the EVALSHA and every command its script ran), the
 * figure issue 42 holds down: a change that makes a step dearer fails here, and one that makes it
 * cheaper updates the figure with the reason (a comment per step). Then what clears a grant's
 * record: the hold's release, or a sweep once nobody waits.
 */
import { describe, expect, it } from "vitest";
import { PACE_TTL_MS } from "../../../src/hold/pace.js";
import { handOffChannelKeys } from "../../../src/hold/queue/hand-off.js";
import { type LockKeys, lockKeys } from "../../../src/hold/script.js";
import { ACQUIRE, waiterArgs } from "../../../src/locks/exclusive/lock.js";
import { RELEASE } from "../../../src/locks/exclusive/release.js";
import { newOperationId } from "../../../src/platform.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, useTestBed } from "./testbed.js";

/** The terms of a waiter's first attempt while its stream is not open yet: it polls. */
const POLLING_TERMS = { timeoutMs: 5_000, roundTripMs: 0, claimMs: 0 } as const;

describe.each(backendKindsUnderTest())("a contended lock's cycle on %s", (kind) => {
  const bed = useTestBed(kind);

  /** Billed commands of one script run (its EVAL included), and its reply. */
  async function run(
    script: typeof ACQUIRE | typeof RELEASE,
    byName: Record<string, string | undefined>,
    args: Record<string, string>,
  ) {
    const before = bed.server.stats.snapshot().billedCommands;
    const reply = (await bed.redis().eval(
      script.keyLocking.source,
      script.keyNames.map((key) => byName[key] ?? ""),
      script.argNames.map((arg) => args[arg] ?? ""),
    )) as number[];
    return {
      reply: reply.map(Number),
      billed: bed.server.stats.snapshot().billedCommands - before,
    };
  }

  /** The lock's script keys, the operation record being `operationId`'s. */
  const byName =
    (keys: LockKeys) =>
    (operationId: string): Record<string, string | undefined> => ({
      lockKey: keys.lock,
      fenceKey: keys.fence,
      operationKey: keys.operation(operationId),
      holdStatsKey: keys.holdStats,
      queueKey: keys.queue,
      timeoutsKey: keys.timeouts,
      parkedKey: keys.parked,
      ...handOffChannelKeys(keys),
    });

  /** One acquire attempt of `owner`'s acquisition `operationId` (claimMs 0: a polling one). */
  function attempt(
    keys: LockKeys,
    owner: string,
    operationId: string,
    {
      claimMs = 2000,
      attempt = 1,
      waiterTimeoutMs = 5000,
      wakeBy = `sub${attempt}.0`,
    }: { claimMs?: number; attempt?: number; waiterTimeoutMs?: number; wakeBy?: string } = {},
  ) {
    return run(ACQUIRE, byName(keys)(operationId), {
      owner,
      leaseMs: "10000",
      operationTtlMs: "60000",
      paceTtlMs: String(PACE_TTL_MS),
      waiterTimeoutMs: String(waiterTimeoutMs),
      roundTripMs: "20",
      claimMs: String(claimMs),
      parkId: operationId,
      parkBeside: "0",
      wakeBy,
    });
  }

  it("joining 26, a poll in place 16, a hand-off 20, taking the grant 8", async () => {
    const keys = lockKeys(freshPrefix(), "contended");
    const acquire = (owner: string, operationId: string, attemptNumber: number) =>
      attempt(keys, owner, operationId, { attempt: attemptNumber });

    const holding = await acquire("holder", newOperationId(), 1);
    expect(holding.reply[0]).toBe(1); // the fast path: free, nobody queued
    const fence = holding.reply[1]!;
    const waiting = newOperationId();

    // Busy: the replay check, the clock, the holder's TTL, its place (the
    // queue and its deadline made, each given its TTL), the hold marked as timed, the statistics
    // read and the round trip written, its parked registration. Every key it makes is new: its
    // TTL costs GT then NX, as the read then the PEXPIRE did before. The queue's length, counted
    // for its place, is not counted again for the reply (29 before). A parking waiter with no
    // registration is at its first attempt: it joins by ZADD NX, without a ZRANK first (28 before).
    // The queue's dead are pruned by the release that hands the lock on, not by every attempt
    // (27 before; a poll in place 17).
    const joined = await acquire("waiter", waiting, 1);
    expect([joined.reply[0], joined.reply[2]]).toEqual([0, 0]); // busy, at the head
    // In place: its rank, and one PEXPIRE GT for the queue and for the deadlines (PTTL then
    // PEXPIRE before: 21); the parked hash, which grant records keep longer, is read first; the
    // same round trip again writes no statistics (19 before).
    const again = await acquire("waiter", waiting, 2);
    expect(again.reply[0]).toBe(0);

    // The release hands the lock to the parked head: the hold's statistics learned, the head's
    // hold, lease and token, its grant recorded and
    // published; the token handed over is the one it timed (no GET of the counter), and no
    // reservation to drop (read with the statistics, not deleted blindly); the parked hash's TTL
    // lengthened by one PEXPIRE GT (30 before the three). One read of the statistics tells the
    // hold was timed and serves the learning; one read of the queue finds the head and the waiter
    // behind it (27 before the two), and one HMGET their registrations (25 before). The statistics'
    // TTL is set here, the hash's first write to record when; a later release within half of it
    // leaves it (see hold-statistics.test.ts). The grant's record is cleared by the hold's release
    // (the next cases), not listed by expiry and pruned here: no LINDEX, RPUSH or PEXPIRE of a
    // grants list (24 before). The head's park has not ended, so it is live: no pruning of the
    // queue's dead (21 before; a dead head costs it, see "a dead head is pruned …" below).
    const released = await run(RELEASE, byName(keys)(newOperationId()), {
      owner: "holder",
      operationTtlMs: "60000",
      paceTtlMs: String(PACE_TTL_MS),
      fencingToken: String(fence),
      grantedWaiter: "",
    });
    expect(released.reply).toEqual([1, 0, 1]);
    // Its next attempt takes the grant: the record read and dropped, the operation recorded, the
    // replay answers with the lease lengthened by one PEXPIRE GT (11 before: two PTTL reads); the
    // record just written is not read back (9 before).
    const took = await acquire("waiter", waiting, 3);
    expect(took.reply.slice(0, 2)).toEqual([1, fence + 1]);

    expect({
      joined: joined.billed,
      again: again.billed,
      released: released.billed,
      took: took.billed,
    }).toEqual({ joined: 26, again: 16, released: 20, took: 8 });
  });

  /** A release script run of `owner`'s hold `token`, naming the waiter it was granted to. */
  const release = (
    keys: LockKeys,
    owner: string,
    token: number,
    grantOf = "",
    operationTtlMs = "60000",
  ) =>
    run(
      RELEASE,
      { ...byName(keys)(newOperationId()), grantOperationKey: keys.operation(grantOf) },
      {
        owner,
        operationTtlMs,
        paceTtlMs: String(PACE_TTL_MS),
        fencingToken: String(token),
        grantedWaiter: grantOf === "" ? "" : `${owner} ${grantOf}`,
      },
    );

  it("a hold granted by word: its release clears the grant's record for 2 commands, and a late copy of the waiter's attempt finds the hold gone", async () => {
    /** A lock handed to a parked waiter by word: its keys, the waiter's operation and token. */
    const handedOver = async (name: string) => {
      const keys = lockKeys(freshPrefix(), name);
      const fence = (await attempt(keys, "holder", newOperationId())).reply[1]!;
      const waiting = newOperationId();
      expect((await attempt(keys, "waiter", waiting)).reply[0]).toBe(0);
      expect((await release(keys, "holder", fence)).reply).toEqual([1, 0, 1]);
      const record = await bed.redis().hget<string>(keys.parked, `waiter ${waiting}`);
      expect(String(record)).toMatch(new RegExp(`^granted ${fence + 1} \\d+$`));
      return { keys, waiting, token: fence + 1 };
    };

    // The waiter heard its word and held without asking; now it releases, naming its grant.
    const byWord = await handedOver("by-word");
    const released = await release(byWord.keys, "waiter", byWord.token, byWord.waiting);
    expect(released.reply).toEqual([1, 0, 0]);
    expect(await bed.redis().exists(byWord.keys.parked)).toBe(0);
    expect(Number(await bed.redis().get(byWord.keys.operation(byWord.waiting)))).toBe(byWord.token);
    // The same release naming no grant (a hold its attempt took) bills 2 commands less: the
    // HDEL of the record and the SET of the acquisition's operation record. Both find nobody
    // queued, so both read the parked hash to sweep it (HGETALL): the record, a second old,
    // stays.
    const unnamed = await handedOver("unnamed");
    const plain = await release(unnamed.keys, "waiter", unnamed.token);
    expect(plain.reply).toEqual([1, 0, 0]);
    expect(await bed.redis().hlen(unnamed.keys.parked)).toBe(1);
    expect({ byWord: released.billed, plain: plain.billed }).toEqual({ byWord: 13, plain: 11 });

    // A copy of the waiter's attempt arriving now replays its acquisition: the hold is gone.
    const copy = await attempt(byWord.keys, "waiter", byWord.waiting, { attempt: 1 });
    expect(copy.reply).toEqual([-1]);
    expect(await bed.redis().exists(byWord.keys.lock)).toBe(0);
  });

  it("a release whose hold lapsed still clears its grant's record, into the acquisition's operation record", async () => {
    const keys = lockKeys(freshPrefix(), "lapsed");
    const fence = (await attempt(keys, "holder", newOperationId())).reply[1]!;
    const waiting = newOperationId();
    expect((await attempt(keys, "waiter", waiting)).reply[0]).toBe(0);
    await release(keys, "holder", fence);
    await bed.redis().del(keys.lock); // the claim window ran out before the waiter confirmed
    expect((await release(keys, "waiter", fence + 1, waiting)).reply).toEqual([0]);
    expect(await bed.redis().hget(keys.parked, `waiter ${waiting}`)).toBeNull();
    expect(Number(await bed.redis().get(keys.operation(waiting)))).toBe(fence + 1);
    // A late copy of its attempt replays that, and takes nothing.
    expect((await attempt(keys, "waiter", waiting)).reply).toEqual([-1]);
    expect(await bed.redis().exists(keys.lock)).toBe(0);
  });

  it("when nobody waits, a release sweeps the parked hash: a grant's record goes once it is as old as an operation record", async () => {
    const operationTtlMs = 400;
    /** A grantee `dead` that never releases; its lock then handed on to `next`, who releases. */
    const deadGrantee = async (name: string, waitMs: number) => {
      const keys = lockKeys(freshPrefix(), name);
      const fence = (await attempt(keys, "holder", newOperationId())).reply[1]!;
      const [dead, next] = [newOperationId(), newOperationId()];
      expect((await attempt(keys, "dead", dead)).reply[0]).toBe(0);
      expect((await attempt(keys, "next", next)).reply[0]).toBe(0);
      await release(keys, "holder", fence, "", String(operationTtlMs));
      expect(String(await bed.redis().hget(keys.parked, `dead ${dead}`))).toMatch(/^granted /);
      await bed.redis().del(keys.lock); // its hold lapses unreleased
      // Another owner takes the free lock; its release hands it on to `next` by word.
      const other = (await attempt(keys, "other", newOperationId())).reply[1]!;
      await release(keys, "other", other, "", String(operationTtlMs));
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      // `next` releases; nobody is queued now.
      await release(keys, "next", other + 1, next, String(operationTtlMs));
      return bed.redis().hgetall<Record<string, string>>(keys.parked);
    };
    // Younger than an operation record: a late copy of its waiter's attempt may still come.
    const young = await deadGrantee("young", 0);
    expect(Object.keys(young ?? {})).toHaveLength(1);
    expect(Object.values(young ?? {}).map(String)[0]).toMatch(/^granted /);
    // Older: swept, and the hash with it.
    expect(await deadGrantee("old", operationTtlMs + 100)).toBeNull();
  });

  it("a dead head is pruned by the release, with every dead waiter, and the live one behind it gets the hand-off", async () => {
    const keys = lockKeys(freshPrefix(), "dead-head");
    const fence = (await attempt(keys, "holder", newOperationId())).reply[1]!;
    const [dead, live, deadToo] = [newOperationId(), newOperationId(), newOperationId()];
    // A polling waiter whose place lasts 200 ms, a parked one, another like the first.
    const dying = { claimMs: 0, waiterTimeoutMs: 200 };
    expect((await attempt(keys, "dead", dead, dying)).reply[2]).toBe(0);
    expect((await attempt(keys, "live", live)).reply[2]).toBe(1);
    expect((await attempt(keys, "dead-too", deadToo, dying)).reply[2]).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 300)); // both stopped polling
    expect((await release(keys, "holder", fence)).reply).toEqual([1, 0, 1]);
    expect(String(await bed.redis().hget(keys.parked, `live ${live}`))).toMatch(
      new RegExp(`^granted ${fence + 1} `),
    );
    expect(await bed.redis().exists(keys.queue, keys.timeouts)).toBe(0);
  });

  it("a live head is handed the lock without pruning: a dead waiter behind it goes once it is the head", async () => {
    const keys = lockKeys(freshPrefix(), "dead-behind");
    const fence = (await attempt(keys, "holder", newOperationId())).reply[1]!;
    const [live, dead] = [newOperationId(), newOperationId()];
    expect((await attempt(keys, "live", live)).reply[2]).toBe(0);
    expect((await attempt(keys, "dead", dead, { claimMs: 0, waiterTimeoutMs: 200 })).reply[2]).toBe(
      1,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const handOff = await release(keys, "holder", fence);
    expect(handOff.reply).toEqual([1, 0, 1]);
    expect(handOff.billed).toBe(20); // as in the cycle above: no ZRANGEBYSCORE
    expect(await bed.redis().zscore(keys.queue, `dead ${dead}`)).not.toBeNull();
    // The grantee's release finds the dead waiter at the head: pruned, nobody left, swept.
    expect((await release(keys, "live", fence + 1, live)).reply).toEqual([1, 0, 0]);
    expect(await bed.redis().exists(keys.queue, keys.timeouts, keys.parked)).toBe(0);
  });

  it("a late copy of an attempt sent before its acquisition parked replays the grant announced since, not a second hold", async () => {
    const keys = lockKeys(freshPrefix(), "copy-before-park");
    const fence = (await attempt(keys, "holder", newOperationId())).reply[1]!;
    const waiting = newOperationId();
    // Its first attempt polls (its stream not yet open): the one a slow network will deliver again.
    const firstTerms = { claimMs: 0, wakeBy: waiterArgs(POLLING_TERMS, waiting).wakeBy };
    expect((await attempt(keys, "waiter", waiting, firstTerms)).reply[0]).toBe(0);
    // Then it parks, and the holder's release hands it the lock by word.
    expect((await attempt(keys, "waiter", waiting, { attempt: 2 })).reply[0]).toBe(0);
    expect((await release(keys, "holder", fence)).reply).toEqual([1, 0, 1]);
    // The copy arrives: it must find the grant's record (the parked hash), whatever its own
    // terms said when it left, and answer the granted hold, held once. (An attempt that skipped
    // the hash because its acquisition had not parked yet took it again as a re-entry, count 2:
    // the chaos run's "no hold count drift", caught on a first version of issue 42's work.)
    const copy = await attempt(keys, "waiter", waiting, firstTerms);
    expect(copy.reply.slice(0, 3)).toEqual([1, fence + 1, 1]);
    expect(Number(await bed.redis().hget(keys.lock, "waiter"))).toBe(1);
  });

  it("a parking waiter in place without a registration keeps its place (ZADD NX, then ZRANK)", async () => {
    const keys = lockKeys(freshPrefix(), "in-place");
    expect((await attempt(keys, "holder", newOperationId())).reply[0]).toBe(1);
    const [first, second] = [newOperationId(), newOperationId()];
    // Two waiters join polling (no registration), then the first one parks.
    expect((await attempt(keys, "first", first, { claimMs: 0 })).reply[2]).toBe(0);
    expect((await attempt(keys, "second", second, { claimMs: 0 })).reply[2]).toBe(1);
    const parked = await attempt(keys, "first", first, { attempt: 2 });
    expect(parked.reply[2]).toBe(0); // still at the head, ahead of the second
    expect(parked.reply[7]).toBe(2); // and in the queue once
    expect(await bed.redis().zcard(keys.queue)).toBe(2);
  });
});

/**
 * A release reserves the freed lock for the waiters at the head of the queue for about a round
 * trip of theirs, so that nobody barges into the gap before their poll; a dead head holds
 * nobody up for longer than that. The plain lock's and the write lock's waiters alike.
 */
import { describe, expect, it } from "vitest";
import { RESERVATION_MS } from "../../../src/hold/queue/lua.js";
import type { Lock, LockClient } from "../../../src/index.js";
import { ACQUIRE } from "../../../src/locks/exclusive/lock.js";
import { WRITE_ACQUIRE } from "../../../src/locks/read-write-lock/write-acquire.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { freshPrefix, sleepMs, useTestBed } from "./testbed.js";

/** A kind whose waiters queue: its lock "gap", and one raw attempt of its acquire script. */
interface QueuedKindUnderTest {
  readonly kind: string;
  lockOf(client: LockClient): Pick<Lock, "acquire" | "tryAcquire" | "isLocked">;
  /** Script, keys and arguments of an attempt by `owner` that reports round trip `rttMs`. */
  attempt(base: string, owner: string, rttMs: number): [string, string[], string[]];
}

const operation = (base: string, owner: string) => `${base}:op:${owner}-${Math.random()}`;

const QUEUED_KINDS: QueuedKindUnderTest[] = [
  {
    kind: "the plain lock",
    lockOf: (client) => client.lock("gap"),
    attempt: (base, owner, rttMs) => [
      ACQUIRE.keyLocking.source,
      [
        base,
        `${base}:fence`,
        operation(base, owner),
        `${base}:holds`,
        `${base}:queue`,
        `${base}:timeouts`,
      ],
      [owner, "10000", "60000", "3600000", "5000", String(rttMs)],
    ],
  },
  {
    kind: "the write lock",
    lockOf: (client) => client.readWriteLock("gap").writeLock(),
    attempt: (base, owner, rttMs) => [
      WRITE_ACQUIRE.keyLocking.source,
      [
        base,
        `${base}:fence`,
        `${base}:reads`,
        `${base}:writers`,
        operation(base, owner),
        `${base}:holds`,
        `${base}:queue`,
        `${base}:timeouts`,
        `${base}:parked`,
      ],
      [owner, "10000", "60000", "3600000", "5000", String(rttMs), "0", "id", "0", "1"],
    ],
  },
];

describe.each(
  backendKindsUnderTest().flatMap((backend) =>
    QUEUED_KINDS.map((queued) => ({ backend, ...queued })),
  ),
)("the release's reservation of $kind on $backend", ({ backend: kind, lockOf, attempt: args }) => {
  const bed = useTestBed(kind);

  /** One attempt of `owner` through the acquire script, as a waiter that reports `rttMs`. */
  async function attempt(prefix: string, owner: string, rttMs: number): Promise<number[]> {
    const [source, keys, argv] = args(`${prefix}:{gap}`, owner, rttMs);
    const reply = await bed.redis().eval(source, keys, argv);
    return (reply as unknown[]).map(Number);
  }

  /** A holder holds "gap"; `waiter` queues behind it (reporting the longest round trip). */
  async function heldWithWaiter(prefix: string, waiter: string) {
    const client = bed.client({ prefix, wait: { mode: "poll" } });
    const held = await lockOf(client).acquire({ leaseMs: 10_000 });
    const [status, , position] = await attempt(prefix, waiter, RESERVATION_MS.max);
    expect([status, position]).toEqual([0, 0]);
    return { client, held };
  }

  it("keeps a barging owner out while the head waiter's window is open; the head takes it", async () => {
    const prefix = freshPrefix();
    const { client, held } = await heldWithWaiter(prefix, "head-waiter-00000000");
    await held.release();
    // Not queued (a single attempt never queues), so not covered by the reservation.
    const barging = await lockOf(client).tryAcquire({ leaseMs: 10_000 });
    expect(barging).toBeNull();
    const [status] = await attempt(prefix, "head-waiter-00000000", 20);
    expect(status).toBe(1);
    expect(await lockOf(client).isLocked()).toBe(true);
  });

  it("frees itself when the head waiter does not come: the window lapses", async () => {
    const prefix = freshPrefix();
    const { client, held } = await heldWithWaiter(prefix, "dead-waiter-00000000");
    await held.release();
    expect(await lockOf(client).tryAcquire({ leaseMs: 10_000 })).toBeNull();
    // The dead waiter keeps its place until its waiter timeout (5 s), but not the lock: after
    // the longest window the lock goes to whoever asks.
    await sleepMs(RESERVATION_MS.max + 100);
    const taken = await lockOf(client).tryAcquire({ leaseMs: 10_000 });
    expect(taken).not.toBeNull();
    await taken?.release();
  });

  it("learns a round trip a quarter or more away from the average, and writes no other", async () => {
    const prefix = freshPrefix();
    const { held } = await heldWithWaiter(prefix, "slow-waiter-00000000");
    const learnt = async () => Number(await bed.redis().hget(`${prefix}:{gap}:holds`, "rtt"));
    expect(await learnt()).toBe(RESERVATION_MS.max);
    // Within a quarter of the average: kept as it is (no write of the statistics).
    await attempt(prefix, "slow-waiter-00000000", RESERVATION_MS.max * 1.2);
    expect(await learnt()).toBe(RESERVATION_MS.max);
    // Twice the average: folded in (weight 1/4), as every round trip was before.
    await attempt(prefix, "slow-waiter-00000000", RESERVATION_MS.max * 2);
    expect(await learnt()).toBe(RESERVATION_MS.max * 1.25);
    await held.release();
  });

  it("lets a waiting owner through once the window lapses, within one window", async () => {
    const prefix = freshPrefix();
    const { client, held } = await heldWithWaiter(prefix, "dead-waiter-00000001");
    await held.release();
    const started = Date.now();
    const next = await lockOf(client).acquire({ leaseMs: 10_000, waitMs: 10_000 });
    // Generous bound for a loaded machine: the window, plus polls and round trips.
    expect(Date.now() - started).toBeLessThan(RESERVATION_MS.max + 3_000);
    await next.release();
  });
});

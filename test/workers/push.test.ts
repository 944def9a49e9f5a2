/**
 * Push hand-off (`wait: { mode: "push" }`) inside workerd, through @upstash/redis/cloudflare
 * against the local server: a parked waiter's blocking pop returns holding the lock, with the next
 * fencing token (plain, fair and write locks), both with the in-process watchdog and beside the
 * Durable Object watchdog.
 */

import { env } from "cloudflare:workers";
import { Redis } from "@upstash/redis/cloudflare";
import { describe, expect, it } from "vitest";
import { durableObjectWatchdog } from "../../src/durable-object/index.js";
import { LockClient, type LockClientOptions } from "../../src/index.js";
import { sleepMs, TEST_SERVERS, until } from "./clients.js";
import { server as watchdogServer } from "./durable-object/support.js";

const servers = TEST_SERVERS;
let prefixes = 0;

/**
 * The waiters below park for up to PARK_MS at a time, and their holders' leases outlast it: without
 * the hand-off a waiter gets the lock only when its park runs out (or the lease lapses), so a wake
 * within WOKEN_WITHIN_MS can only be the release's hand-off, with a margin of ten times.
 */
const PARK_MS = 20_000;
const HOLD_LEASE_MS = 60_000;
const WAIT_MS = 25_000;
const WOKEN_WITHIN_MS = 2_000;

/** A holder (polling), a push-mode waiter with `waiterOptions`, and a raw view, on one prefix. */
function contenders(
  server: { url: string; token: string },
  waiterOptions: Omit<LockClientOptions, "redis" | "prefix"> = {},
) {
  prefixes += 1;
  const prefix = `wp${Date.now().toString(36)}${prefixes}`;
  const redis = () => new Redis({ url: server.url, token: server.token });
  const holder = new LockClient({ redis: redis(), prefix });
  const waiter = new LockClient({
    redis: redis(),
    prefix,
    ...waiterOptions,
    wait: { mode: "push", ...waiterOptions.wait },
  });
  const parked = (name: string) => redis().hlen(`${prefix}:{${name}}:parked`);
  return { holder, waiter, parked };
}

describe.each(servers)("push hand-off in workerd on $kind", (server) => {
  it.each(["lock", "fairLock"] as const)(
    "%s: the release wakes the parked waiter holding the next fencing token",
    async (kind) => {
      const { holder, waiter, parked } = contenders(server, { wait: { parkMs: PARK_MS } });
      const held = await holder[kind]("job").acquire({ leaseMs: HOLD_LEASE_MS });
      const waiting = waiter[kind]("job").acquire({ leaseMs: 10_000, waitMs: WAIT_MS });
      // Registered and parked: its blocking pop is open at the server.
      await until(async () => (await parked("job")) === 1);
      const releasedAt = Date.now();
      await held.release();
      const handle = await waiting;
      // Woken by the hand-off, long before its park ran out or the holder's lease lapsed.
      expect(Date.now() - releasedAt).toBeLessThan(WOKEN_WITHIN_MS);
      expect(handle.fencingToken).toBe(held.fencingToken + 1);
      expect(await holder[kind]("job").isHeldBy(handle.owner)).toBe(true);
      expect(await parked("job")).toBe(0);
      await handle.release();
      expect(await holder[kind]("job").isLocked()).toBe(false);
    },
  );
});

describe.each(servers)("write lock push hand-off in workerd on $kind", (server) => {
  it("the last read hold's release wakes the parked writer holding the lock", async () => {
    const { holder, waiter, parked } = contenders(server, { wait: { parkMs: PARK_MS } });
    const read = await holder.readWriteLock("doc").readLock().acquire({ leaseMs: HOLD_LEASE_MS });
    const writing = waiter
      .readWriteLock("doc")
      .writeLock()
      .acquire({ leaseMs: 10_000, waitMs: WAIT_MS });
    await until(async () => (await parked("doc")) === 1);
    const releasedAt = Date.now();
    await read.release();
    const handle = await writing;
    expect(Date.now() - releasedAt).toBeLessThan(WOKEN_WITHIN_MS);
    expect(await holder.readWriteLock("doc").writeLock().isHeldBy(handle.owner)).toBe(true);
    expect(await parked("doc")).toBe(0);
    await handle.release();
    expect(await holder.readWriteLock("doc").writeLock().isLocked()).toBe(false);
  });
});

describe(`push hand-off beside the Durable Object watchdog on ${watchdogServer.kind}`, () => {
  it("the woken waiter's hold is renewed by the object past its claim window", async () => {
    const watchdog = durableObjectWatchdog(env.LOCK_WATCHDOG, { heartbeatIntervalMs: 0 });
    const { holder, waiter, parked } = contenders(watchdogServer, {
      // Not shorter: a loaded machine may stall an alarm or an answer for a second (an acquire
      // answered after its first lease is lost on arrival).
      watchdogTimeoutMs: 2_000,
      watchdog,
      // Shorter than the watchdog lease: the woken hold must confirm its own lease at once.
      wait: { claimMs: 200 },
    });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const waiting = waiter.lock("job").acquire({ waitMs: 8_000 });
    await until(async () => (await parked("job")) === 1);
    await held.release();
    const handle = await waiting;
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    expect(handle.renewing).toBe(true);
    await watchdog.settled();
    // Several claim windows and watchdog leases: only the object's renewals keep it.
    const end = Date.now() + 4_500;
    while (Date.now() < end) {
      expect(await holder.lock("job").isHeldBy(handle.owner)).toBe(true);
      await sleepMs(100);
    }
    expect(handle.signal.aborted, String(handle.signal.reason)).toBe(false);
    const status = await watchdog.status(handle);
    expect(status.state).toBe("renewing");
    await handle.release();
    await watchdog.settled();
    expect(await holder.lock("job").isLocked()).toBe(false);
  });
});

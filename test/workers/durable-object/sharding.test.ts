/**
 * Shard by lock or by owner? Measured: one owner holds several locks in Durable Object watchdog
 * mode for a while; we count Durable Object requests, alarm invocations and HTTP requests to
 * Redis in each layout. (Printed for docs/lease-vs-watchdog.md; asserted to the round.)
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { LockWatchdog, type ShardBy } from "../../../src/durable-object/index.js";
import { LockClient } from "../../../src/index.js";
import { server, sleepMs, watchdogBed } from "./support.js";

const LOCKS = 4;
// Not shorter: on a loaded machine an acquire answered after its first lease is lost on arrival.
const LEASE_MS = 1_500;
const HOLD_MS = 4_500;

interface Measure {
  shardBy: ShardBy;
  doRequests: Record<string, number>;
  alarms: number;
  redisRequests: number;
  renewRounds: number;
}

async function measure(shardBy: ShardBy): Promise<Measure> {
  const bed = watchdogBed(LEASE_MS, { heartbeatIntervalMs: 0, shardBy });
  const owner = LockClient.newOwner();
  let alarms = 0;
  let redisRequests = 0;
  const originalAlarm = LockWatchdog.prototype.alarm;
  LockWatchdog.prototype.alarm = function (this: LockWatchdog, info) {
    alarms += 1;
    return originalAlarm.call(this, info);
  };
  const originalFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (url.startsWith(server.url)) redisRequests += 1;
    return originalFetch(input, init);
  });
  const handles = [];
  for (let i = 0; i < LOCKS; i++) handles.push(await bed.client.lock(`m${i}`).acquire({ owner }));
  await bed.watchdog.settled();
  const heldFrom = { alarms, redisRequests };
  await sleepMs(HOLD_MS);
  const during = {
    alarms: alarms - heldFrom.alarms,
    redis: redisRequests - heldFrom.redisRequests,
  };
  try {
    for (const handle of handles) {
      expect(handle.signal.aborted, String(handle.signal.reason)).toBe(false);
      await handle.release();
    }
    await bed.watchdog.settled();
  } finally {
    LockWatchdog.prototype.alarm = originalAlarm;
    vi.restoreAllMocks();
  }
  return {
    shardBy,
    doRequests: { ...bed.namespace.calls },
    alarms: during.alarms,
    redisRequests: during.redis,
    renewRounds: Math.floor(HOLD_MS / (LEASE_MS / 3)),
  };
}

describe(`sharding the LockWatchdog on ${server.kind}`, () => {
  afterEach(() => vi.restoreAllMocks());

  it("by owner: one alarm and one pipelined Redis request per round; by lock: one per lock", async () => {
    const byLock = await measure("lock");
    const byOwner = await measure("owner");
    console.log(
      `${LOCKS} locks of one owner held ${HOLD_MS} ms, lease ${LEASE_MS} ms (~${byLock.renewRounds} rounds):\n` +
        [byLock, byOwner]
          .map(
            (m) =>
              `  shardBy ${m.shardBy}: DO requests ${JSON.stringify(m.doRequests)}, alarms ${m.alarms}, Redis HTTP requests ${m.redisRequests}`,
          )
          .join("\n"),
    );
    // Registration and deregistration: one Durable Object request per lock each, both ways.
    expect(byLock.doRequests).toEqual({ register: LOCKS, deregister: LOCKS });
    expect(byOwner.doRequests).toEqual({ register: LOCKS, deregister: LOCKS });
    // Renewal: a round every third of the lease (9 in the hold; 36 and 9 alarms measured). By
    // lock each object has its own rounds; by owner the owner's leases share them in one object.
    // Rounds are timers, not counts: one round more or less per object is timing (a round due as
    // the window opens or closes), anything more is a change of behaviour.
    const rounds = byOwner.renewRounds;
    expect(byOwner.alarms).toBeGreaterThanOrEqual(rounds - 1);
    expect(byOwner.alarms).toBeLessThanOrEqual(rounds + 1);
    expect(byLock.alarms).toBeGreaterThanOrEqual(LOCKS * (rounds - 1));
    expect(byLock.alarms).toBeLessThanOrEqual(LOCKS * (rounds + 1));
    // Each alarm sends one (pipelined) request to Redis: exact, but for an alarm that began as
    // the window closed and had not sent yet.
    for (const measured of [byLock, byOwner]) {
      expect(measured.redisRequests).toBeLessThanOrEqual(measured.alarms);
      expect(measured.redisRequests).toBeGreaterThanOrEqual(measured.alarms - 1);
    }
  });
});

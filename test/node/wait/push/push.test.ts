/**
 * Push hand-off (`wait: { mode: "push" }`): a waiter parks on a blocking pop and the holder's
 * release hands the lock to it inside Redis. Real redis-server and the embedded engine behind the
 * local REST server, the real @upstash/redis client.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  inProcessRenewer,
  LockAbortedError,
  LockClient,
  type LockClientOptions,
  LockInputError,
  LockWaitTimeoutError,
  type RedisLike,
  type Renewer,
} from "../../../../src/index.js";
import { FREE_ASKS_TO_FORGET } from "../../../../src/wait/push/client-state.js";
import { backendKindsUnderTest } from "../../../support/backends.js";
import {
  dyingAfterPark,
  freshPrefix,
  sleepMs,
  until,
  useTestBed,
  wakeListsWithNone,
} from "../../exclusive/testbed.js";
import {
  abortedHeadSkipped,
  concurrentAcquisitionsOfOneOwner,
  forceReleaseHandsOver,
  grantBeforeAttemptAnswer,
  lateGrantNotTrusted,
  type ParkingKind,
} from "./push-scenarios.js";

const PUSH = { mode: "push" } as const;
const PLAIN_LOCK: ParkingKind = { name: "job", lockOf: (client) => client.lock("job") };
const FAIR_LOCK: ParkingKind = { name: "job", lockOf: (client) => client.fairLock("job") };

/**
 * A Redis client whose scripts can be held back (gate closed) while blocking commands pass; it
 * counts the parks sent and ended, and the scripts held back.
 */
function gatedScripts(redis: RedisLike & { exec: NonNullable<RedisLike["exec"]> }) {
  let opened: Promise<void> = Promise.resolve();
  let openGate = () => {};
  const state = { parks: 0, parksEnded: 0, heldBack: 0 };
  const afterGate = async <T>(run: () => Promise<T>): Promise<T> => {
    const gate = opened;
    state.heldBack += 1;
    await gate;
    state.heldBack -= 1;
    return run();
  };
  const gated: RedisLike = {
    eval: (script, keys, args) => afterGate(() => redis.eval(script, keys, args)),
    evalsha: (sha, keys, args) => afterGate(() => redis.evalsha(sha, keys, args)),
    exec: async (command) => {
      state.parks += 1;
      try {
        return await redis.exec(command);
      } finally {
        state.parksEnded += 1;
      }
    },
  };
  return {
    redis: gated,
    get parks() {
      return state.parks;
    },
    get parksEnded() {
      return state.parksEnded;
    },
    get heldBack() {
      return state.heldBack;
    },
    close() {
      opened = new Promise((resolve) => {
        openGate = resolve;
      });
    },
    open() {
      openGate();
      opened = Promise.resolve();
    },
  };
}

/**
 * A Redis client whose blocking commands go out one at a time, as through a REST proxy that
 * serves the blocked pops of one client on one connection (or a runtime that allows a few
 * connections): a pop waits until the one before it has been answered.
 */
function onePopAtATime(redis: RedisLike & { exec: NonNullable<RedisLike["exec"]> }): RedisLike {
  let previous: Promise<unknown> = Promise.resolve();
  return {
    eval: (script, keys, args) => redis.eval(script, keys, args),
    evalsha: (sha, keys, args) => redis.evalsha(sha, keys, args),
    exec: (command) => {
      const answer = previous.then(
        () => redis.exec(command),
        () => redis.exec(command),
      );
      previous = answer.catch(() => {});
      return answer;
    },
  };
}

describe.each(backendKindsUnderTest())("push hand-off on %s", (kind) => {
  // Parks block only where the backend's pops do: a Redis behind a REST proxy.
  const bed = useTestBed(kind, { profile: "redis" });
  afterEach(() => bed.server.faults.disable());
  const lockCommands = () => bed.lockCommands();

  it("wakes a parked waiter already holding the lock, with the next fencing token", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: PUSH });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const waiting = waiter.lock("job").acquire({ leaseMs: 10_000 });
    // The waiter has registered and parked: its blocking pop is open at the server.
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    await sleepMs(50);
    const before = bed.requests();
    await held.release();
    const handle = await waiting;
    // The release handed the lock over: no further request of the waiter's was needed.
    expect(bed.requests() - before).toBe(1);
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    expect(await waiter.lock("job").isLocked()).toBe(true);
    expect(await holder.lock("job").holdCount(handle.owner)).toBe(1);
    await handle.release();
    expect(await waiter.lock("job").isLocked()).toBe(false);
  });

  it("costs attempt + park + release per contended acquisition", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiters = [0, 1, 2].map(() => bed.client({ prefix, wait: PUSH }));
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const before = lockCommands();
    const order: number[] = [];
    const runs = waiters.map(async (client, index) => {
      const handle = await client.lock("job").acquire({ leaseMs: 10_000 });
      order.push(index);
      await sleepMs(20);
      await handle.release();
    });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 3);
    await held.release();
    await Promise.all(runs);
    // Each waiter: one attempt (which registered it), one park, one release; and the holder's
    // release. And one park again for each of the two waiters told that the lock went to the
    // waiter ahead: with no hold statistics yet, their parks were bounded by the holder's 10 s
    // lease, so a grant to a dead waiter would have left the lock idle that long.
    expect(lockCommands() - before).toBe(3 * 3 + 1 + 2);
    expect(order.sort()).toEqual([0, 1, 2]);
  });

  it("where the client recently waited, the park goes out beside the first attempt", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const gate = gatedScripts(bed.redis());
    const waiter = bed.client({ prefix, redis: gate.redis, wait: PUSH });
    const parkedCount = () => bed.redis().hlen(`${prefix}:{job}:parked`);
    // A first, contended acquisition: attempt, then park after its reply.
    let held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    let waiting = waiter.lock("job").acquire({ leaseMs: 10_000 });
    await until(async () => (await parkedCount()) === 1);
    await held.release();
    await (await waiting).release();
    expect(gate.parks).toBe(1);

    // The next one on the same key: while its attempt is held back, its park is already out.
    held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    gate.close();
    const before = lockCommands();
    waiting = waiter.lock("job").acquire({ leaseMs: 10_000 });
    await until(() => gate.parks === 2 && gate.heldBack === 1);
    gate.open();
    await until(async () => (await parkedCount()) === 1);
    await held.release();
    const handle = await waiting;
    // Attempt, park, and the holder's release that handed over.
    expect(lockCommands() - before).toBe(3);
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    await handle.release();

    // Free at the first ask: the park beside it is woken at once, and its wake list is gone.
    for (let ask = 1; ask <= FREE_ASKS_TO_FORGET; ask++) {
      const free = lockCommands();
      const again = await waiter.lock("job").acquire({ leaseMs: 10_000 });
      expect(gate.parks).toBe(2 + ask);
      await until(() => gate.parksEnded === 2 + ask);
      expect(lockCommands() - free).toBe(2);
      // (A grant's second copy, kept for a re-sent pop, lives out its claim window.)
      expect(await wakeListsWithNone(bed, `${prefix}:{job}`)).toEqual([]);
      await again.release();
    }
    // Free that many times in a row: no longer contended as far as this client knows, and an
    // acquisition is one request again.
    const quiet = lockCommands();
    await (await waiter.lock("job").acquire({ leaseMs: 10_000 })).release();
    expect(lockCommands() - quiet).toBe(2);
    expect(gate.parks).toBe(2 + FREE_ASKS_TO_FORGET);
  });

  it("a release that hands over marks the lock contended for the releaser's next acquisition", async () => {
    const prefix = freshPrefix();
    const gate = gatedScripts(bed.redis());
    const holder = bed.client({ prefix, redis: gate.redis, wait: PUSH });
    const waiter = bed.client({ prefix, wait: PUSH });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const waiting = waiter.lock("job").acquire({ leaseMs: 10_000 });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    await held.release();
    // The holder never waited, but its release handed over: its next attempt parks beside.
    const handle = await waiting;
    expect(gate.parks).toBe(0);
    gate.close();
    const next = holder.lock("job").acquire({ leaseMs: 10_000 });
    await until(() => gate.parks === 1 && gate.heldBack === 1);
    gate.open();
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    await handle.release();
    await (await next).release();
  });

  it("a park sent beside the attempt still takes a dead holder's lock when its lease ends", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: PUSH });
    let held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const waiting = waiter.lock("job").acquire({ leaseMs: 10_000 });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    await held.release();
    await (await waiting).release();
    // The holder dies holding a 600 ms lease; the waiter's park (up to 5 s) is already out.
    held = await holder.lock("job").acquire({ leaseMs: 600 });
    const started = Date.now();
    const handle = await waiter.lock("job").acquire({ leaseMs: 10_000 });
    // It asked again when the lease ended, instead of sitting out the whole park.
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    await handle.release();
  });

  it("a parked waiter whose answer is lost still acquires exactly once (the re-sent pop finds the grant)", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: { mode: "push", parkMs: 400 } });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    // The grant is popped, and its answer lost: @upstash/redis re-sends the pop, which finds
    // the grant's second copy at once.
    bed.server.faults.configure({ dropAfterExecute: 1, commands: ["blpop"], maxFaults: 1 });
    const waiting = waiter.lock("job").acquire({ leaseMs: 10_000 });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    await sleepMs(50);
    await held.release();
    const handle = await waiting;
    expect(bed.server.faults.counts().dropAfterExecute).toBe(1);
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    expect(await waiter.lock("job").holdCount(handle.owner)).toBe(1);
    // Its hold is the hand-off's: the claim window, confirmed at half of it to its own lease.
    await until(async () => (await bed.redis().pttl(`${prefix}:{job}`)) > 5_000);
    expect(handle.signal.aborted).toBe(false);
    await handle.release();
    expect(await waiter.lock("job").isLocked()).toBe(false);
  });

  it("aborting a parked waiter leaves the queue: the next release hands nothing to it", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: PUSH });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const abort = new AbortController();
    const waiting = waiter.lock("job").acquire({ leaseMs: 10_000, signal: abort.signal });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    const abortedAt = Date.now();
    abort.abort();
    await expect(waiting).rejects.toBeInstanceOf(LockAbortedError);
    expect(Date.now() - abortedAt).toBeLessThan(2_000);
    expect(await bed.redis().hlen(`${prefix}:{job}:parked`)).toBe(0);
    expect(await bed.redis().zcard(`${prefix}:{job}:queue`)).toBe(0);
    await held.release();
    expect(await holder.lock("job").isLocked()).toBe(false);
  });

  it("an aborted parked waiter's pop is answered at once: it holds no connection for the rest of its park", async () => {
    // edgelock stops waiting for an aborted pop but cannot cancel the request: until the leave
    // ended it, it stayed open at the server (and on the way: a proxy's or a Worker's connection)
    // for the rest of its park, 5 s.
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const gate = gatedScripts(bed.redis());
    const waiter = bed.client({ prefix, redis: gate.redis, wait: PUSH });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const abort = new AbortController();
    const waiting = waiter.lock("job").acquire({ leaseMs: 10_000, signal: abort.signal });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    await until(() => gate.parks === 1);
    await sleepMs(50);
    const abortedAt = Date.now();
    abort.abort();
    await expect(waiting).rejects.toBeInstanceOf(LockAbortedError);
    await until(() => gate.parksEnded === 1, 4_000);
    expect(Date.now() - abortedAt).toBeLessThan(1_000);
    await held.release();
    expect(await holder.lock("job").isLocked()).toBe(false);
  });

  it("issue 41 case 6: behind one pop at a time, an aborted head's pop does not hold up the waiter behind", async () => {
    // Both waiters' pops go through one connection. The head aborts: its pop, which the client
    // no longer waits for, stays open for the rest of its park (5 s) unless the leave ends it,
    // and the waiter behind cannot pop until then (the issue saw the lock 4.8 s after the release).
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const proxy = onePopAtATime(bed.redis());
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const abort = new AbortController();
    const head = bed
      .client({ prefix, redis: proxy, wait: PUSH })
      .lock("job")
      .acquire({ leaseMs: 10_000, signal: abort.signal });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    const behind = bed
      .client({ prefix, redis: proxy, wait: PUSH })
      .lock("job")
      .acquire({ leaseMs: 10_000 });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 2);
    await sleepMs(100);
    abort.abort();
    await expect(head).rejects.toBeInstanceOf(LockAbortedError);
    const releasedAt = Date.now();
    await held.release();
    // Without the leave ending it, the waiter's pop went out after the abandoned one (5 s),
    // past the grant's claim window, and ended in LockBackendError 7 s after the release.
    const outcome = await behind.then(
      (handle) => ({ handle, tookMs: Date.now() - releasedAt }),
      (error: unknown) => ({ error, tookMs: Date.now() - releasedAt }),
    );
    expect(outcome.tookMs).toBeLessThan(1_000);
    if (!("handle" in outcome)) throw outcome.error;
    expect(outcome.handle.fencingToken).toBe(held.fencingToken + 1);
    await outcome.handle.release();
  });

  it("a parked waiter gives up at its waitMs and leaves the queue", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: PUSH });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const startedAt = Date.now();
    await expect(
      waiter.lock("job").acquire({ leaseMs: 10_000, waitMs: 300 }),
    ).rejects.toBeInstanceOf(LockWaitTimeoutError);
    expect(Date.now() - startedAt).toBeLessThan(3_000);
    expect(await bed.redis().hlen(`${prefix}:{job}:parked`)).toBe(0);
    await held.release();
    expect(await holder.lock("job").isLocked()).toBe(false);
  });

  it("tryAcquire() with push mode makes one attempt and never parks", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const waiter = bed.client({ prefix, wait: PUSH });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const before = lockCommands();
    expect(await waiter.lock("job").tryAcquire({ leaseMs: 10_000 })).toBeNull();
    expect(lockCommands() - before).toBe(1);
    expect(await bed.redis().hlen(`${prefix}:{job}:parked`)).toBe(0);
    await held.release();
  });

  it("the fair lock hands over in queue order", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const held = await holder.fairLock("job").acquire({ leaseMs: 10_000 });
    const order: number[] = [];
    const runs: Promise<void>[] = [];
    for (const index of [0, 1, 2, 3]) {
      const client = bed.client({ prefix, wait: PUSH });
      runs.push(
        client
          .fairLock("job")
          .acquire({ leaseMs: 10_000 })
          .then(async (handle) => {
            order.push(index);
            await handle.release();
          }),
      );
      await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === index + 1);
    }
    await held.release();
    await Promise.all(runs);
    expect(order).toEqual([0, 1, 2, 3]);
  });

  it("a handed-off hold held past half its claim window confirms its own lease", async () => {
    for (const leaseMs of [5_000, undefined]) {
      const prefix = freshPrefix();
      const holder = bed.client({ prefix });
      const waiter = bed.client({ prefix, wait: { mode: "push", claimMs: 400 } });
      const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
      const waiting = waiter.lock("job").acquire(leaseMs === undefined ? {} : { leaseMs });
      await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
      await held.release();
      const handle = await waiting;
      // Granted for the claim window only…
      expect(await bed.redis().pttl(`${prefix}:{job}`)).toBeLessThanOrEqual(400);
      // …and confirmed at half of it: still held well past the window, signal untouched.
      await sleepMs(800);
      expect(await waiter.lock("job").holdCount(handle.owner)).toBe(1);
      expect(await bed.redis().pttl(`${prefix}:{job}`)).toBeGreaterThan(2_000);
      expect(handle.signal.aborted).toBe(false);
      await handle.release();
    }
  });

  it("a fixed lease confirmed after a hand-off ends one lease after the grant, however late the claim arrives", async () => {
    const prefix = freshPrefix();
    const holder = bed.client({ prefix });
    const gate = gatedScripts(bed.redis());
    const waiter = bed.client({
      prefix,
      redis: gate.redis,
      wait: { mode: "push", claimMs: 1_000 },
    });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const waiting = waiter.lock("job").acquire({ leaseMs: 3_000 });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    const releasedAt = Date.now();
    await held.release();
    const handle = await waiting;
    // The claim (sent at half the window) is held back 400 ms on its way to Redis.
    gate.close();
    await until(() => gate.heldBack === 1, 2_000);
    await sleepMs(400);
    gate.open();
    await until(() => gate.heldBack === 0);
    await sleepMs(50);
    const pttl = await bed.redis().pttl(`${prefix}:{job}`);
    // The grant came after `releasedAt`: the hold ends 3 s after it, not 3 s after the claim
    // reached Redis (which would be ~400 ms later).
    expect(pttl).toBeGreaterThan(0);
    expect(Date.now() + pttl).toBeLessThanOrEqual(releasedAt + 3_000 + 100);
    expect(handle.signal.aborted).toBe(false);
    await handle.release();
  });

  it("in watchdog mode the in-process watchdog confirms the claim: when its renewals die, so does the claim", async () => {
    const prefix = freshPrefix();
    // The in-process renewer, with a switch that stops every renewal, as the end of a Workers
    // invocation stops its timers.
    const renewals: { stop(): void }[] = [];
    const inner = inProcessRenewer();
    const dying: Renewer = {
      inProcess: true,
      start: (target, confirmedAt) => {
        const renewal = inner.start(target, confirmedAt);
        renewals.push(renewal);
        return renewal;
      },
    };
    const holder = bed.client({ prefix });
    const waiter = bed.client({
      prefix,
      watchdog: dying,
      watchdogTimeoutMs: 5_000,
      wait: { mode: "push", claimMs: 400 },
    });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    const waiting = waiter.lock("job").acquire();
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    await held.release();
    const handle = await waiting;
    expect(renewals).toHaveLength(1);
    for (const renewal of renewals) renewal.stop();
    // Nothing confirms the claim window (400 ms): the lock is free soon after, not in 5 s.
    await until(async () => !(await holder.lock("job").isLocked()), 2_000);
    expect(handle.signal.aborted).toBe(true);
  });

  it("a grant to a waiter that died while parked passes on after the claim window", async () => {
    const prefix = freshPrefix();
    const options: Partial<LockClientOptions> = { prefix, wait: { mode: "push", claimMs: 500 } };
    // Learn the rhythm of the lock first (short holds, handed over).
    const warm = bed.client(options);
    for (let i = 0; i < 3; i++)
      await (await warm.lock("job").acquire({ leaseMs: 10_000 })).release();
    const holder = bed.client({ prefix });
    const held = await holder.lock("job").acquire({ leaseMs: 10_000 });
    // A waiter registers, parks, and its process dies: nothing it sends gets anywhere again.
    const dead = bed.client({ ...options, redis: dyingAfterPark(bed.redis()) });
    void dead
      .lock("job")
      .acquire({ leaseMs: 10_000 })
      .catch(() => {});
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 1);
    const live = bed.client(options);
    const waiting = live.lock("job").acquire({ leaseMs: 10_000 });
    await until(async () => (await bed.redis().hlen(`${prefix}:{job}:parked`)) === 2);
    await sleepMs(100);
    const releasedAt = Date.now();
    await held.release();
    const handle = await waiting;
    const passedOnAfter = Date.now() - releasedAt;
    // The dead waiter was granted the claim window (500 ms); the live one took the lock soon
    // after it ran out.
    expect(passedOnAfter).toBeGreaterThanOrEqual(400);
    expect(passedOnAfter).toBeLessThan(500 + 1_500);
    expect(handle.fencingToken).toBe(held.fencingToken + 2);
    await handle.release();
  });

  it("a grant that comes back before the attempt's own answer is taken at once", () =>
    grantBeforeAttemptAnswer(bed, PLAIN_LOCK));

  it("a grant that reaches its waiter after the claim window is not trusted: the waiter asks again", () =>
    lateGrantNotTrusted(bed, PLAIN_LOCK));

  it("forceRelease() hands the lock to the parked head", () =>
    forceReleaseHandsOver(bed, PLAIN_LOCK));

  it("the fair lock's forceRelease() hands the lock to the parked head", () =>
    forceReleaseHandsOver(bed, FAIR_LOCK));

  it("concurrent acquisitions of one owner: the hand-off to one lets the other re-enter at once", () =>
    concurrentAcquisitionsOfOneOwner(bed, PLAIN_LOCK));

  it("the fair lock: concurrent acquisitions of one owner both hold after one hand-off", () =>
    concurrentAcquisitionsOfOneOwner(bed, FAIR_LOCK));

  for (const [label, parkingKind] of [
    ["lock", PLAIN_LOCK],
    ["fair lock", FAIR_LOCK],
  ] as const) {
    it(`${label}: an aborted parked head is skipped: the release hands the lock to the waiter behind`, () =>
      abortedHeadSkipped(bed, parkingKind, false));
    it(`${label}: a head aborted as the release comes passes its grant on to the waiter behind`, () =>
      abortedHeadSkipped(bed, parkingKind, true));
  }

  it("rejects push mode for a Redis client that cannot send a blocking command", async () => {
    const redis = bed.redis();
    const scriptsOnly = {
      eval: redis.eval.bind(redis),
      evalsha: redis.evalsha.bind(redis),
    } as unknown as ConstructorParameters<typeof LockClient>[0]["redis"];
    expect(() => new LockClient({ redis: scriptsOnly, wait: PUSH })).toThrow(LockInputError);
    const client = new LockClient({ redis: scriptsOnly, prefix: freshPrefix() });
    const before = bed.requests();
    await expect(client.lock("job").acquire({ wait: PUSH })).rejects.toThrow(LockInputError);
    expect(bed.requests()).toBe(before);
  });
});

/**
 * Model-based test of the fair lock's server operations: random sequences of polls (which
 * queue), single attempts (which never queue), give-ups, releases, expiries, dead waiters and
 * force-releases by several owners, checked step by step against a reference FIFO model.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { OperationContext } from "../../../src/hold/context.js";
import { leaveQueue } from "../../../src/hold/queue/leave.js";
import { queueLength } from "../../../src/hold/queue/length.js";
import { type FairLockKeys, fairLockKeys } from "../../../src/hold/script.js";
import { forceRelease } from "../../../src/locks/exclusive/force-release.js";
import { inspectLock } from "../../../src/locks/exclusive/inspect.js";
import { attemptAcquire } from "../../../src/locks/exclusive/lock.js";
import { releaseHold } from "../../../src/locks/exclusive/release.js";
import { newOperationId } from "../../../src/platform.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { checkModel, expireNow, newOwners, scriptContext } from "../../support/model.js";
import { freshPrefix, useTestBed } from "../exclusive/testbed.js";

const OWNERS = 4;
const WAITER_TIMEOUT_MS = 20_000;

interface Model {
  holder: number | null;
  count: number;
  /** The last fencing token handed out. */
  token: number;
  queue: number[];
}

interface Real {
  ctx: OperationContext;
  keys: FairLockKeys;
  owners: string[];
  /** Each owner's current acquisition: its operation id names its place in the queue. */
  waits: string[];
  expireHolder(): Promise<void>;
  killWaiter(member: string): Promise<void>;
}

type Cmd = fc.AsyncCommand<Model, Real>;

/** The model's answer to an attempt by `who`; `queues` when the attempt may join the queue. */
function attemptInModel(m: Model, who: number, queues: boolean): "acquired" | number {
  if (m.holder === who) {
    m.count += 1;
    return "acquired";
  }
  if (m.holder === null && (m.queue.length === 0 || m.queue[0] === who)) {
    m.holder = who;
    m.count = 1;
    m.token += 1;
    m.queue = m.queue.filter((w) => w !== who);
    return "acquired";
  }
  if (queues && !m.queue.includes(who)) m.queue.push(who);
  return queues ? m.queue.indexOf(who) : -1;
}

class Attempt implements Cmd {
  constructor(
    readonly who: number,
    readonly queues: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const outcome = await attemptAcquire(
      r.ctx,
      r.keys,
      "fair",
      r.owners[this.who]!,
      20_000,
      r.waits[this.who]!,
      { timeoutMs: this.queues ? WAITER_TIMEOUT_MS : 0, roundTripMs: 0, claimMs: 0 },
    );
    // A place in the queue belongs to one acquisition: the owner's next one, after a hold, is new.
    if (outcome.kind === "acquired") r.waits[this.who] = newOperationId();
    const expected = attemptInModel(m, this.who, this.queues);
    if (expected === "acquired") {
      expect(outcome).toEqual({ kind: "acquired", fencingToken: m.token });
    } else {
      expect(outcome.kind).toBe("busy");
      // guard: narrows the type only; the line above asserts the branch is taken.
      if (outcome.kind === "busy") {
        expect(outcome.queue.position).toBe(expected);
        expect(outcome.queue.locked).toBe(m.holder !== null);
      }
    }
  }
  toString = () => `${this.queues ? "poll" : "tryOnce"}(${this.who})`;
}

class Leave implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const left = await leaveQueue(
      r.ctx,
      [r.keys.queue, r.keys.timeouts],
      r.owners[this.who]!,
      r.waits[this.who]!,
    );
    expect(left.kind).toBe(m.queue.includes(this.who) ? "left" : "notWaiting");
    m.queue = m.queue.filter((w) => w !== this.who);
  }
  toString = () => `leave(${this.who})`;
}

class Release implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const result = await releaseHold(r.ctx, r.keys, r.owners[this.who]!);
    if (m.holder === this.who) {
      m.count -= 1;
      // (`othersWaiting` only steers this client's next park; the model does not track it.)
      expect(result).toMatchObject({ released: true, holdsLeft: m.count });
      if (m.count === 0) m.holder = null;
    } else {
      expect(result).toEqual({ released: false });
    }
  }
  toString = () => `release(${this.who})`;
}

class ExpireHolder implements Cmd {
  check = () => true;
  async run(m: Model, r: Real) {
    await r.expireHolder();
    m.holder = null;
    m.count = 0;
  }
  toString = () => "expireHolder";
}

class KillWaiter implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    // Its queue member: the owner and its acquisition's id.
    await r.killWaiter(`${r.owners[this.who]!} ${r.waits[this.who]!}`);
    m.queue = m.queue.filter((w) => w !== this.who);
  }
  toString = () => `killWaiter(${this.who})`;
}

class ForceRelease implements Cmd {
  check = () => true;
  async run(m: Model, r: Real) {
    expect(await forceRelease(r.ctx, r.keys)).toBe(m.holder !== null);
    m.holder = null;
    m.count = 0;
  }
  toString = () => "forceRelease";
}

class Observe implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    expect(await queueLength(r.ctx, r.keys.timeouts)).toBe(m.queue.length);
    const state = await inspectLock(r.ctx, r.keys, r.owners[this.who]);
    expect(state.locked).toBe(m.holder !== null);
    expect(state.holds).toBe(m.holder === this.who ? m.count : 0);
  }
  toString = () => `observe(${this.who})`;
}

describe.each(backendKindsUnderTest())("fair lock against its FIFO model on %s", (kind) => {
  const bed = useTestBed(kind);

  it("agrees with the model on every step", async () => {
    const who = fc.integer({ min: 0, max: OWNERS - 1 });
    await checkModel<Model, Real>({
      commands: [
        who.map((w) => new Attempt(w, true)),
        who.map((w) => new Attempt(w, true)),
        who.map((w) => new Attempt(w, false)),
        who.map((w) => new Leave(w)),
        who.map((w) => new Release(w)),
        who.map((w) => new Release(w)),
        who.map((w) => new KillWaiter(w)),
        who.map((w) => new Observe(w)),
        fc.constant(new ExpireHolder()),
        fc.constant(new ForceRelease()),
      ],
      maxCommands: 40,
      size: "max",
      setup: (run) => {
        const redis = bed.redis();
        const keys = fairLockKeys(freshPrefix(), `model-${run}`);
        const real: Real = {
          ctx: scriptContext(redis),
          keys,
          owners: newOwners(OWNERS),
          waits: Array.from({ length: OWNERS }, () => newOperationId()),
          expireHolder: () => expireNow(redis, keys.lock),
          async killWaiter(member) {
            // Its deadline is long past: the next script prunes it, as after a crash.
            await redis.zadd(keys.timeouts, { xx: true }, { score: 1, member });
          },
        };
        return { model: { holder: null, count: 0, token: 0, queue: [] }, real };
      },
      numRuns: 30,
      seed: 20261122,
    });
  });
});

/**
 * Model-based test of the semaphore's server operations: random sequences of queued polls,
 * single attempts, give-ups, releases, extends, expiries, dead waiters and capacity changes by
 * several owners, checked step by step against a reference model. Besides agreeing on every
 * answer: an acquisition never brings the permits of live holds above the capacity, and held +
 * available = capacity whenever the holds fit in it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { OperationContext } from "../../../src/hold/context.js";
import { abandonPermits } from "../../../src/locks/semaphore/abandon.js";
import { attemptPermits } from "../../../src/locks/semaphore/acquire.js";
import { changeCapacity, readSemaphore } from "../../../src/locks/semaphore/capacity.js";
import { extendPermits, holdMember } from "../../../src/locks/semaphore/extend.js";
import { type SemaphoreKeys, semaphoreKeys } from "../../../src/locks/semaphore/keys.js";
import { releasePermits } from "../../../src/locks/semaphore/release.js";
import { newOperationId } from "../../../src/platform.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { checkModel, newOwners, scriptContext } from "../../support/model.js";
import { freshPrefix, useTestBed } from "../exclusive/testbed.js";

const OWNERS = 4;
const LEASE_MS = 60_000;
const WAITER_TIMEOUT_MS = 60_000;
/** Owner i always asks for this many permits, so that its queue place names one demand. */
const permitsOf = (who: number) => 1 + (who % 3);

interface Hold {
  readonly token: number;
  readonly who: number;
  readonly permits: number;
}

interface Model {
  capacity: number | null;
  holds: Hold[];
  /** Waiting owners, first come first served. */
  queue: number[];
  token: number;
}

interface Real {
  ctx: OperationContext;
  keys: SemaphoreKeys;
  owners: string[];
  /** Each owner's current queued acquisition. */
  waits: string[];
  expire(member: string): Promise<void>;
  killWaiter(member: string): Promise<void>;
}

type Cmd = fc.AsyncCommand<Model, Real>;

const heldIn = (m: Model) => m.holds.reduce((sum, hold) => sum + hold.permits, 0);
const demandOf = (owners: readonly number[]) =>
  owners.reduce((sum, who) => sum + permitsOf(who), 0);

class Attempt implements Cmd {
  constructor(
    readonly who: number,
    readonly queues: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const permits = permitsOf(this.who);
    const operationId = this.queues ? r.waits[this.who]! : newOperationId();
    const outcome = await attemptPermits(
      r.ctx,
      r.keys,
      r.owners[this.who]!,
      permits,
      LEASE_MS,
      operationId,
      { timeoutMs: this.queues ? WAITER_TIMEOUT_MS : 0, initialPermits: undefined },
    );
    const rank = this.queues ? m.queue.indexOf(this.who) : -1;
    const leave = () => {
      if (this.queues) m.queue = m.queue.filter((w) => w !== this.who);
    };
    if (m.capacity === null) {
      leave();
      expect(outcome).toEqual({ kind: "uninitialized" });
      return;
    }
    if (permits > m.capacity) {
      leave();
      expect(outcome).toEqual({ kind: "tooMany", capacity: m.capacity });
      return;
    }
    const held = heldIn(m);
    const reserved = demandOf(rank < 0 ? m.queue : m.queue.slice(0, rank));
    if (held + reserved + permits <= m.capacity) {
      leave();
      m.token += 1;
      m.holds.push({ token: m.token, who: this.who, permits });
      expect(outcome).toEqual({ kind: "acquired", fencingToken: m.token });
      // The invariant: an acquisition never takes the live holds past the capacity.
      expect(heldIn(m)).toBeLessThanOrEqual(m.capacity);
      if (this.queues) r.waits[this.who] = newOperationId();
      return;
    }
    if (this.queues && rank < 0) m.queue.push(this.who);
    expect(outcome).toMatchObject({
      kind: "busy",
      position: this.queues ? m.queue.indexOf(this.who) : -1,
      available: Math.max(0, m.capacity - held),
      waiters: m.queue.length,
    });
  }
  toString = () => `${this.queues ? "poll" : "tryOnce"}(${this.who})`;
}

/** Picks the hold at `index` (modulo), or none when there is none. */
function pick(m: Model, index: number): Hold | undefined {
  return m.holds.length === 0 ? undefined : m.holds[index % m.holds.length];
}

class Release implements Cmd {
  constructor(readonly index: number) {}
  check = (m: Readonly<Model>) => m.holds.length > 0;
  async run(m: Model, r: Real) {
    const hold = pick(m, this.index)!;
    const result = await releasePermits(
      r.ctx,
      r.keys,
      r.owners[hold.who]!,
      hold.token,
      newOperationId(),
    );
    expect(result.released).toBe(true);
    m.holds = m.holds.filter((h) => h !== hold);
    // Its handle's second release finds it gone.
    const again = await releasePermits(
      r.ctx,
      r.keys,
      r.owners[hold.who]!,
      hold.token,
      newOperationId(),
    );
    expect(again.released).toBe(false);
  }
  toString = () => `release(#${this.index})`;
}

class Expire implements Cmd {
  constructor(readonly index: number) {}
  check = (m: Readonly<Model>) => m.holds.length > 0;
  async run(m: Model, r: Real) {
    const hold = pick(m, this.index)!;
    await r.expire(holdMember(r.owners[hold.who]!, hold.token));
    m.holds = m.holds.filter((h) => h !== hold);
    // A renewal after the lease passed finds the hold gone: it takes nothing again.
    expect(await extendPermits(r.ctx, r.keys, r.owners[hold.who]!, hold.token, LEASE_MS)).toBe(
      false,
    );
  }
  toString = () => `expire(#${this.index})`;
}

class Extend implements Cmd {
  constructor(readonly index: number) {}
  check = (m: Readonly<Model>) => m.holds.length > 0;
  async run(m: Model, r: Real) {
    const hold = pick(m, this.index)!;
    expect(await extendPermits(r.ctx, r.keys, r.owners[hold.who]!, hold.token, LEASE_MS)).toBe(
      true,
    );
  }
  toString = () => `extend(#${this.index})`;
}

class Leave implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    await abandonPermits(
      r.ctx,
      r.keys,
      r.owners[this.who]!,
      permitsOf(this.who),
      r.waits[this.who]!,
    );
    m.queue = m.queue.filter((w) => w !== this.who);
    r.waits[this.who] = newOperationId();
  }
  toString = () => `leave(${this.who})`;
}

class KillWaiter implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    await r.killWaiter(`${r.owners[this.who]!} ${r.waits[this.who]!} ${permitsOf(this.who)}`);
    m.queue = m.queue.filter((w) => w !== this.who);
  }
  toString = () => `killWaiter(${this.who})`;
}

class ChangeCapacity implements Cmd {
  constructor(
    readonly change: "trySet" | "set" | "add" | "drain",
    readonly n: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const result = await changeCapacity(r.ctx, r.keys, this.change, this.n, newOperationId());
    const current = m.capacity ?? 0;
    switch (this.change) {
      case "trySet":
        expect(result.done).toBe(m.capacity === null);
        m.capacity ??= this.n;
        break;
      case "set":
        m.capacity = this.n;
        break;
      case "add":
        expect(result.done).toBe(current + this.n >= 0);
        if (current + this.n >= 0) m.capacity = current + this.n;
        break;
      case "drain": {
        const drained = m.capacity === null ? 0 : Math.max(0, m.capacity - heldIn(m));
        expect(result).toEqual({ done: true, value: drained });
        if (m.capacity !== null) m.capacity -= drained;
        break;
      }
    }
  }
  toString = () => `${this.change}(${this.n})`;
}

class Observe implements Cmd {
  check = () => true;
  async run(m: Model, r: Real) {
    const state = await readSemaphore(r.ctx, r.keys);
    const held = heldIn(m);
    expect(state).toEqual({
      capacity: m.capacity,
      held,
      holds: m.holds.length,
      available: Math.max(0, (m.capacity ?? 0) - held),
      waiters: m.queue.length,
    });
    // Permits are conserved while the holds fit: held + available = capacity.
    // guard: a shrink below what is held, or no capacity yet, has no such sum (the state is asserted whole above).
    if (m.capacity !== null && held <= m.capacity) {
      expect(state.held + state.available).toBe(m.capacity);
    }
  }
  toString = () => "observe";
}

describe.each(backendKindsUnderTest())("semaphore against its model on %s", (kind) => {
  const bed = useTestBed(kind);

  it("agrees with the model on every step", async () => {
    const who = fc.integer({ min: 0, max: OWNERS - 1 });
    const index = fc.nat(20);
    await checkModel<Model, Real>({
      commands: [
        who.map((w) => new Attempt(w, true)),
        who.map((w) => new Attempt(w, true)),
        who.map((w) => new Attempt(w, true)),
        who.map((w) => new Attempt(w, false)),
        index.map((i) => new Release(i)),
        index.map((i) => new Release(i)),
        index.map((i) => new Expire(i)),
        index.map((i) => new Extend(i)),
        who.map((w) => new Leave(w)),
        who.map((w) => new KillWaiter(w)),
        fc.integer({ min: 0, max: 6 }).map((n) => new ChangeCapacity("trySet", n)),
        fc.integer({ min: 0, max: 6 }).map((n) => new ChangeCapacity("set", n)),
        fc.integer({ min: -4, max: 4 }).map((n) => new ChangeCapacity("add", n)),
        fc.constant(new ChangeCapacity("drain", 0)),
        fc.constant(new Observe()),
        fc.constant(new Observe()),
      ],
      after: [new Observe()],
      maxCommands: 50,
      size: "max",
      setup: (run) => {
        const redis = bed.redis();
        const keys = semaphoreKeys(freshPrefix(), `model-${run}`);
        const real: Real = {
          ctx: scriptContext(redis),
          keys,
          owners: newOwners(OWNERS),
          waits: Array.from({ length: OWNERS }, () => newOperationId()),
          async expire(member) {
            // Its lease is long past: the next script prunes it, as after a crash.
            const entry = await redis.hget<string>(keys.leases, member);
            if (entry === null) return;
            const [permits, since = "-"] = String(entry).split(" ");
            await redis.hset(keys.leases, { [member]: `${permits} ${since} 1` });
          },
          async killWaiter(member) {
            await redis.zadd(keys.timeouts, { xx: true }, { score: 1, member });
          },
        };
        return { model: { capacity: null, holds: [], queue: [], token: 0 }, real };
      },
      numRuns: 30,
      seed: 20261126,
    });
  });
});

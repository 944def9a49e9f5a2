/**
 * Model-based test: random sequences of acquire / re-enter / release / extend / force-release /
 * expiry by several owners, checked step by step against a reference model of a reentrant lock.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { LockClient, LockHandle } from "../../../src/index.js";
import type { SingleNameLock } from "../../../src/locks/single-name-lock.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { checkModel, expireNow, heldOutcome, newOwners, perOwner } from "../../support/model.js";
import { useTestBed } from "./testbed.js";

const OWNERS = 3;

interface Model {
  holder: number | null;
  count: number;
}

interface Real {
  lock(): SingleNameLock;
  owners: string[];
  handles: LockHandle[][];
  expire(): Promise<void>;
}

type Cmd = fc.AsyncCommand<Model, Real>;

class Acquire implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const handle = await r.lock().tryAcquire({ leaseMs: 20_000, owner: r.owners[this.who] });
    if (m.holder === null || m.holder === this.who) {
      expect(handle).not.toBeNull();
      m.holder = this.who;
      m.count += 1;
      r.handles[this.who]!.push(handle!);
    } else {
      expect(handle).toBeNull();
    }
  }
  toString = () => `acquire(${this.who})`;
}

class Release implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const handle = r.handles[this.who]!.pop();
    if (!handle) return;
    const outcome = await heldOutcome(handle.release(), "released");
    if (m.holder === this.who) {
      expect(outcome).toBe("released");
      m.count -= 1;
      if (m.count === 0) m.holder = null;
    } else {
      expect(outcome).toBe("not-held");
    }
  }
  toString = () => `release(${this.who})`;
}

class Extend implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const handle = r.handles[this.who]!.at(-1);
    if (!handle) return;
    const outcome = await heldOutcome(handle.extend(20_000), "extended");
    expect(outcome).toBe(m.holder === this.who ? "extended" : "not-held");
  }
  toString = () => `extend(${this.who})`;
}

class ForceRelease implements Cmd {
  check = () => true;
  async run(m: Model, r: Real) {
    expect(await r.lock().forceRelease()).toBe(m.holder !== null);
    m.holder = null;
    m.count = 0;
  }
  toString = () => "forceRelease";
}

class Expire implements Cmd {
  check = () => true;
  async run(m: Model, r: Real) {
    await r.expire();
    m.holder = null;
    m.count = 0;
  }
  toString = () => "expire";
}

class Observe implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const lock = r.lock();
    expect(await lock.isLocked()).toBe(m.holder !== null);
    expect(await lock.holdCount(r.owners[this.who])).toBe(m.holder === this.who ? m.count : 0);
  }
  toString = () => `observe(${this.who})`;
}

// Every exclusive kind on one name behaves as this model when nobody queues.
const KINDS: ReadonlyArray<
  readonly [string, (client: LockClient, name: string) => SingleNameLock]
> = [
  ["reentrant lock", (client, name) => client.lock(name)],
  ["fair lock", (client, name) => client.fairLock(name)],
  ["write lock", (client, name) => client.readWriteLock(name).writeLock()],
];

const CASES = KINDS.flatMap(([kind, make]) =>
  backendKindsUnderTest().map((backend) => [kind, backend, make] as const),
);

describe.each(CASES)("%s against the reentrant model on %s", (_, backend, make) => {
  const bed = useTestBed(backend);

  it("agrees with the model on every step", async () => {
    const who = fc.integer({ min: 0, max: OWNERS - 1 });
    await checkModel<Model, Real>({
      commands: [
        who.map((w) => new Acquire(w)),
        who.map((w) => new Acquire(w)),
        who.map((w) => new Release(w)),
        who.map((w) => new Release(w)),
        who.map((w) => new Extend(w)),
        who.map((w) => new Observe(w)),
        fc.constant(new ForceRelease()),
        fc.constant(new Expire()),
      ],
      maxCommands: 25,
      setup: (run) => {
        const redis = bed.redis();
        const client = bed.client({ redis });
        const name = `model-${run}`;
        const real: Real = {
          lock: () => make(client, name),
          owners: newOwners(OWNERS),
          handles: perOwner(OWNERS),
          expire: () => expireNow(redis, `${client.prefix}:{${name}}`),
        };
        return { model: { holder: null, count: 0 }, real };
      },
      numRuns: 30,
      seed: 20261122,
    });
  });
});

/**
 * Model-based test: random sequences of multi-lock and single-lock acquisitions, releases and
 * force-releases by two owners over four locks (three on one database, one on another), checked
 * step by step against a model of reentrant locks. A MultiLock must act as "all members or none",
 * each member keeping its reentrant hold count.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Lock, LockHandle, MultiLock, MultiLockHandle } from "../../../src/index.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { checkModel, heldOutcome, newOwners, perOwner } from "../../support/model.js";
import { freshPrefix, useTestBed } from "../exclusive/testbed.js";

const OWNERS = 2;
const MEMBERS = ["a", "b", "c", "d"] as const; // "d" lives on the second database
const SETS = [[0, 1], [1, 2, 3], [0, 3], [0, 1, 2, 3], [2]] as const;

type Model = { holder: number | null; count: number }[];

interface Held {
  members: readonly number[];
  handle: LockHandle | MultiLockHandle;
}

interface Real {
  locks: Lock[];
  multiOf(set: readonly number[]): MultiLock;
  owners: string[];
  held: Held[][];
}

type Cmd = fc.AsyncCommand<Model, Real>;

function free(m: Model, members: readonly number[], who: number): boolean {
  return members.every((i) => m[i]!.holder === null || m[i]!.holder === who);
}

class AcquireMulti implements Cmd {
  constructor(
    readonly who: number,
    readonly set: readonly number[],
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const handle = await r
      .multiOf(this.set)
      .tryAcquire({ leaseMs: 30_000, owner: r.owners[this.who] });
    if (!free(m, this.set, this.who)) {
      expect(handle).toBeNull();
      return;
    }
    expect(handle).not.toBeNull();
    for (const i of this.set) {
      m[i]!.holder = this.who;
      m[i]!.count += 1;
    }
    r.held[this.who]!.push({ members: this.set, handle: handle! });
  }
  toString = () => `multi(${this.who}, ${this.set.map((i) => MEMBERS[i]).join("")})`;
}

class AcquireOne implements Cmd {
  constructor(
    readonly who: number,
    readonly member: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const handle = await r.locks[this.member]!.tryAcquire({
      leaseMs: 30_000,
      owner: r.owners[this.who],
    });
    if (!free(m, [this.member], this.who)) {
      expect(handle).toBeNull();
      return;
    }
    expect(handle).not.toBeNull();
    m[this.member]!.holder = this.who;
    m[this.member]!.count += 1;
    r.held[this.who]!.push({ members: [this.member], handle: handle! });
  }
  toString = () => `one(${this.who}, ${MEMBERS[this.member]})`;
}

class Release implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const held = r.held[this.who]!.pop();
    if (!held) return;
    const outcome = await heldOutcome(held.handle.release(), "released");
    const allHeld = held.members.every((i) => m[i]!.holder === this.who);
    expect(outcome).toBe(allHeld ? "released" : "not-held");
    // The members still held are released even when another was lost.
    for (const i of held.members) {
      if (m[i]!.holder !== this.who) continue;
      m[i]!.count -= 1;
      if (m[i]!.count === 0) m[i]!.holder = null;
    }
  }
  toString = () => `release(${this.who})`;
}

class ForceRelease implements Cmd {
  constructor(readonly member: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    expect(await r.locks[this.member]!.forceRelease()).toBe(m[this.member]!.holder !== null);
    m[this.member] = { holder: null, count: 0 };
  }
  toString = () => `forceRelease(${MEMBERS[this.member]})`;
}

class Observe implements Cmd {
  check = () => true;
  async run(m: Model, r: Real) {
    for (const [i, lock] of r.locks.entries()) {
      for (const [who, owner] of r.owners.entries()) {
        const expected = m[i]!.holder === who ? m[i]!.count : 0;
        expect(await lock.holdCount(owner)).toBe(expected);
      }
    }
  }
  toString = () => "observe";
}

describe.each(backendKindsUnderTest())("MultiLock against its model (%s)", (kind) => {
  const one = useTestBed(kind);
  const two = useTestBed(kind);

  it("agrees with the model on every step", async () => {
    const who = fc.integer({ min: 0, max: OWNERS - 1 });
    const set = fc.constantFrom(...SETS);
    const member = fc.integer({ min: 0, max: MEMBERS.length - 1 });
    await checkModel<Model, Real>({
      commands: [
        fc.tuple(who, set).map(([w, s]) => new AcquireMulti(w, s)),
        fc.tuple(who, set).map(([w, s]) => new AcquireMulti(w, s)),
        fc.tuple(who, member).map(([w, i]) => new AcquireOne(w, i)),
        who.map((w) => new Release(w)),
        who.map((w) => new Release(w)),
        member.map((i) => new ForceRelease(i)),
        fc.constant(new Observe()),
      ],
      maxCommands: 20,
      after: [new Observe()],
      setup: () => {
        const prefix = freshPrefix();
        const first = one.client({ prefix });
        const second = two.client({ prefix });
        const locks = MEMBERS.map((name) => (name === "d" ? second : first).lock(name));
        const real: Real = {
          locks,
          multiOf: (members) => first.multiLock(members.map((i) => locks[i]!)),
          owners: newOwners(OWNERS),
          held: perOwner(OWNERS),
        };
        return { model: MEMBERS.map(() => ({ holder: null, count: 0 })), real };
      },
      numRuns: 25,
      seed: 20261123,
    });
  });
});

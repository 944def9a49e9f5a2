/**
 * Model-based test of the read-write lock: random sequences of read and write attempts,
 * releases, expiries (of the write hold, of one owner's read holds), force-releases and waiting
 * writers by several owners, checked step by step against a reference model of a reentrant
 * read-write lock with writer preference and refused upgrades.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { OperationContext } from "../../../src/hold/context.js";
import { leaveQueue } from "../../../src/hold/queue/leave.js";
import { type ReadWriteLockKeys, readWriteLockKeys } from "../../../src/hold/script.js";
import {
  type LockHandle,
  LockNotHeldError,
  LockUpgradeError,
  type ReadWriteLock,
} from "../../../src/index.js";
import { attemptWriteAcquire } from "../../../src/locks/read-write-lock/write-acquire.js";
import { newOperationId } from "../../../src/platform.js";
import { backendKindsUnderTest } from "../../support/backends.js";
import { checkModel, expireNow, newOwners, perOwner, scriptContext } from "../../support/model.js";
import { useTestBed } from "../exclusive/testbed.js";

const OWNERS = 3;

interface Model {
  writer: number | null;
  writes: number;
  reads: number[];
  waiting: Set<number>;
  token: number;
}

interface Real {
  rw: ReadWriteLock;
  ctx: OperationContext;
  keys: ReadWriteLockKeys;
  owners: string[];
  /** Each owner's waiting writer acquisition (always busy: its id never records a hold). */
  waits: string[];
  readHandles: LockHandle[][];
  writeHandles: LockHandle[];
  /** Handles whose holds the model knows are gone. */
  stale: Stale[];
  expireWrite(): Promise<void>;
  expireReads(owner: string): Promise<void>;
}

type Cmd = fc.AsyncCommand<Model, Real>;

interface Stale {
  handle: LockHandle;
  kind: "read" | "write";
  who: number;
}

const staleOf = (handles: LockHandle[], kind: Stale["kind"], r: Real): Stale[] =>
  handles.map((handle) => ({ handle, kind, who: r.owners.indexOf(handle.owner) }));

const totalReads = (m: Model) => m.reads.reduce((a, b) => a + b, 0);

/** What a write attempt by `who` gets in the model. */
function writeVerdict(m: Model, who: number): "upgrade" | "busy" | "acquired" {
  if (m.writer !== who && m.reads[who]! > 0) return "upgrade";
  if (m.writer !== null && m.writer !== who) return "busy";
  if (m.writer === null && totalReads(m) > 0) return "busy";
  return "acquired";
}

class Read implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const handle = await r.rw.readLock().tryAcquire({ leaseMs: 20_000, owner: r.owners[this.who] });
    const otherWriter = m.writer !== null && m.writer !== this.who;
    const deferToWriter = m.waiting.size > 0 && m.writer !== this.who && m.reads[this.who] === 0;
    if (otherWriter || deferToWriter) {
      expect(handle).toBeNull();
      return;
    }
    expect(handle?.fencingToken).toBe(m.token);
    m.reads[this.who]! += 1;
    r.readHandles[this.who]!.push(handle!);
  }
  toString = () => `read(${this.who})`;
}

class Write implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const outcome = await r.rw
      .writeLock()
      .tryAcquire({ leaseMs: 20_000, owner: r.owners[this.who] })
      .catch((e: unknown) => e);
    const verdict = writeVerdict(m, this.who);
    if (verdict === "upgrade") {
      expect(outcome).toBeInstanceOf(LockUpgradeError);
    } else if (verdict === "busy") {
      expect(outcome).toBeNull();
    } else {
      if (m.writer === null) {
        m.token += 1;
        m.writer = this.who;
      }
      m.writes += 1;
      // The waiting writer's registration belongs to its own acquisition (WaitToWrite's), which
      // this one is not: it stays until that acquisition gives up.
      expect((outcome as LockHandle).fencingToken).toBe(m.token);
      r.writeHandles.push(outcome as LockHandle);
    }
  }
  toString = () => `write(${this.who})`;
}

/**
 * A writer's waiting attempt: busy, so it registers (readers without holds then defer). The
 * attempt also gives it a ticket in the lock's queue, which only paces: a release then reserves
 * the lock for the queue's head for a round trip (test/node/read-write-lock/pacing.test.ts), a
 * timed window this model leaves out, so the ticket is taken back.
 */
class WaitToWrite implements Cmd {
  constructor(readonly who: number) {}
  check = (m: Readonly<Model>) => writeVerdict(m as Model, this.who) === "busy";
  async run(m: Model, r: Real) {
    const owner = r.owners[this.who]!;
    const outcome = await attemptWriteAcquire(
      r.ctx,
      r.keys,
      "model",
      true,
      owner,
      20_000,
      r.waits[this.who]!,
      { timeoutMs: 20_000, roundTripMs: 0, claimMs: 0 },
    );
    expect(outcome.kind).toBe("busy");
    const left = await leaveQueue(
      r.ctx,
      [r.keys.queue, r.keys.timeouts],
      owner,
      r.waits[this.who]!,
    );
    expect(left.kind).toBe("left");
    m.waiting.add(this.who);
  }
  toString = () => `waitToWrite(${this.who})`;
}

class GiveUpWriting implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const left = await leaveQueue(r.ctx, [r.keys.writers], r.owners[this.who]!, r.waits[this.who]!);
    expect(left.kind).toBe(m.waiting.has(this.who) ? "left" : "notWaiting");
    m.waiting.delete(this.who);
  }
  toString = () => `giveUpWriting(${this.who})`;
}

class ReleaseRead implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const handle = r.readHandles[this.who]!.pop();
    if (!handle) return;
    await handle.release();
    m.reads[this.who]! -= 1;
  }
  toString = () => `releaseRead(${this.who})`;
}

class ReleaseWrite implements Cmd {
  check = () => true;
  async run(m: Model, r: Real) {
    const handle = r.writeHandles.pop();
    if (!handle) return;
    await handle.release();
    m.writes -= 1;
    if (m.writes === 0) m.writer = null;
  }
  toString = () => "releaseWrite";
}

class ReleaseStale implements Cmd {
  check = () => true;
  async run(m: Model, r: Real) {
    const stale = r.stale.pop();
    if (!stale || stale.handle.released) return;
    if (stale.kind === "write" && m.writer === stale.who && stale.handle.fencingToken === m.token) {
      // Write holds of one hold belong to the owner (as a reentrant lock's): an old handle of
      // that same hold (its token) releases one.
      await stale.handle.release();
      m.writes -= 1;
      if (m.writes === 0) m.writer = null;
      // One of its live handles now stands for a hold that is gone.
      r.stale.push(...staleOf(r.writeHandles.splice(-1), "write", r));
      return;
    }
    // A read hold is the handle's own, and a write hold that ended is gone for its handles: a
    // later write hold of the same owner has a newer token, which the old handle leaves alone.
    await expect(stale.handle.release()).rejects.toBeInstanceOf(LockNotHeldError);
  }
  toString = () => "releaseStale";
}

class ExpireWrite implements Cmd {
  check = () => true;
  async run(m: Model, r: Real) {
    await r.expireWrite();
    r.stale.push(...staleOf(r.writeHandles.splice(0), "write", r));
    m.writer = null;
    m.writes = 0;
  }
  toString = () => "expireWrite";
}

class ExpireReads implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    await r.expireReads(r.owners[this.who]!);
    r.stale.push(...staleOf(r.readHandles[this.who]!.splice(0), "read", r));
    m.reads[this.who] = 0;
  }
  toString = () => `expireReads(${this.who})`;
}

class ForceRelease implements Cmd {
  constructor(readonly side: "read" | "write") {}
  check = () => true;
  async run(m: Model, r: Real) {
    if (this.side === "read") {
      expect(await r.rw.readLock().forceRelease()).toBe(totalReads(m) > 0);
      for (const handles of r.readHandles) r.stale.push(...staleOf(handles.splice(0), "read", r));
      m.reads = m.reads.map(() => 0);
    } else {
      expect(await r.rw.writeLock().forceRelease()).toBe(m.writer !== null);
      r.stale.push(...staleOf(r.writeHandles.splice(0), "write", r));
      m.writer = null;
      m.writes = 0;
    }
  }
  toString = () => `forceRelease(${this.side})`;
}

class Observe implements Cmd {
  constructor(readonly who: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const owner = r.owners[this.who]!;
    expect(await r.rw.readLock().holdCount(owner)).toBe(m.reads[this.who]);
    expect(await r.rw.readLock().isLocked()).toBe(totalReads(m) > 0);
    expect(await r.rw.writeLock().holdCount(owner)).toBe(m.writer === this.who ? m.writes : 0);
    expect(await r.rw.writeLock().isLocked()).toBe(m.writer !== null);
  }
  toString = () => `observe(${this.who})`;
}

describe.each(backendKindsUnderTest())("read-write lock against its model on %s", (kind) => {
  const bed = useTestBed(kind);

  it("agrees with the model on every step", async () => {
    const who = fc.integer({ min: 0, max: OWNERS - 1 });
    await checkModel<Model, Real>({
      commands: [
        who.map((w) => new Read(w)),
        who.map((w) => new Read(w)),
        who.map((w) => new Write(w)),
        who.map((w) => new Write(w)),
        who.map((w) => new WaitToWrite(w)),
        who.map((w) => new GiveUpWriting(w)),
        who.map((w) => new ReleaseRead(w)),
        who.map((w) => new ReleaseRead(w)),
        fc.constant(new ReleaseWrite()),
        fc.constant(new ReleaseStale()),
        fc.constant(new ExpireWrite()),
        who.map((w) => new ExpireReads(w)),
        fc.constantFrom(new ForceRelease("read"), new ForceRelease("write")),
        who.map((w) => new Observe(w)),
      ],
      maxCommands: 40,
      size: "max",
      setup: (run) => {
        const redis = bed.redis();
        const client = bed.client({ redis });
        const name = `model-${run}`;
        const keys = readWriteLockKeys(client.prefix, name);
        const real: Real = {
          rw: client.readWriteLock(name),
          ctx: scriptContext(redis),
          keys,
          owners: newOwners(OWNERS),
          waits: Array.from({ length: OWNERS }, () => newOperationId()),
          readHandles: perOwner(OWNERS),
          writeHandles: [],
          stale: [],
          expireWrite: () => expireNow(redis, keys.lock),
          async expireReads(owner) {
            // Its holds' expiries are long past: the next script prunes them.
            const holds = await redis.zrange<string[]>(keys.reads, 0, -1);
            for (const hold of holds.filter((h) => h.startsWith(`${owner} `))) {
              await redis.zadd(keys.reads, { xx: true }, { score: 1, member: hold });
            }
          },
        };
        const model: Model = {
          writer: null,
          writes: 0,
          reads: Array.from({ length: OWNERS }, () => 0),
          waiting: new Set(),
          token: 0,
        };
        return { model, real };
      },
      numRuns: 100,
      seed: 20261122,
      verbose: true,
    });
  });
});

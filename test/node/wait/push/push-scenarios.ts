/**
 * Push hand-off scenarios that every exclusive kind which parks must pass the same way (the
 * plain lock, the write lock): each takes the kind's lock from a client and runs the scenario
 * on a test bed. The test files of the kinds call them, one `it` each.
 */
import { expect } from "vitest";
import {
  LockAbortedError,
  type LockClient,
  type LockHandle,
  LockNotHeldError,
} from "../../../../src/index.js";
import {
  freshPrefix,
  sleepMs,
  slowScriptAnswers,
  type TestBed,
  until,
} from "../../exclusive/testbed.js";

/** What the scenarios use of a lock of the kind. */
interface ExclusiveLock {
  acquire(options: { leaseMs: number; signal?: AbortSignal }): Promise<LockHandle>;
  tryAcquire(options: { leaseMs: number }): Promise<LockHandle | null>;
  holdCount(owner: string): Promise<number>;
  isLocked(): Promise<boolean>;
  forceRelease(): Promise<boolean>;
}

/** A kind under test: its lock from a client, and the name in its keys. */
export interface ParkingKind {
  readonly name: string;
  lockOf(client: LockClient): ExclusiveLock;
}

const parkedCount = (bed: TestBed, prefix: string, kind: ParkingKind) =>
  bed.redis().hlen(`${prefix}:{${kind.name}}:parked`);

/**
 * A waiter whose attempt registered it, but whose answer (busy) comes back 1.5 s late, is
 * woken by the release's grant and holds the lock at once.
 */
export async function grantBeforeAttemptAnswer(bed: TestBed, kind: ParkingKind): Promise<void> {
  const prefix = freshPrefix();
  const holder = kind.lockOf(bed.client({ prefix }));
  const slow = slowScriptAnswers(bed.redis());
  const waiter = kind.lockOf(bed.client({ prefix, wait: { mode: "push" }, redis: slow.redis }));
  // The waiter waits once, so that its next acquisition parks beside its first attempt.
  const first = await holder.acquire({ leaseMs: 10_000 });
  const waited = waiter.acquire({ leaseMs: 10_000 });
  await until(async () => (await parkedCount(bed, prefix, kind)) === 1);
  await first.release();
  await (await waited).release();

  const held = await holder.acquire({ leaseMs: 10_000 });
  slow.state.delayMs = 1_500; // the attempt's answer (busy) comes back 1.5 s late
  const waiting = waiter.acquire({ leaseMs: 10_000 });
  await until(async () => (await parkedCount(bed, prefix, kind)) === 1); // it ran: registered
  const releasedAt = Date.now();
  await held.release();
  const handle = await waiting;
  slow.state.delayMs = 0;
  // Woken by the grant, not by the attempt's late answer.
  expect(Date.now() - releasedAt).toBeLessThan(1_000);
  expect(handle.fencingToken).toBe(held.fencingToken + 1);
  expect(await holder.holdCount(handle.owner)).toBe(1);
  await handle.release();
  expect(await holder.isLocked()).toBe(false);
}

/**
 * A grant whose answer reaches the parked waiter after its claim window (300 ms) is not
 * trusted: the lock came free meanwhile and an intruder took it; the waiter asks again and gets
 * the lock only after the intruder.
 */
export async function lateGrantNotTrusted(bed: TestBed, kind: ParkingKind): Promise<void> {
  const prefix = freshPrefix();
  const holder = kind.lockOf(bed.client({ prefix }));
  const held = await holder.acquire({ leaseMs: 10_000 });
  // The waiter's park will be answered 800 ms after it pops: past its 300 ms claim window.
  bed.server.faults.configure({ latencyMs: 800, commands: ["blpop"] });
  const waiter = kind.lockOf(bed.client({ prefix, wait: { mode: "push", claimMs: 300 } }));
  let resolvedAt = 0;
  const waiting = waiter.acquire({ leaseMs: 10_000 }).then((handle) => {
    resolvedAt = Date.now();
    return handle;
  });
  await until(async () => (await parkedCount(bed, prefix, kind)) === 1);
  await held.release(); // hands the lock to the waiter; its park's answer is on its way
  await sleepMs(450);
  bed.server.faults.disable();
  // The window ran out unclaimed: the lock came free, and someone else took it.
  const intruder = await kind.lockOf(bed.client({ prefix })).tryAcquire({ leaseMs: 10_000 });
  expect(intruder?.fencingToken).toBe(held.fencingToken + 2);
  await sleepMs(900); // the late grant has reached the waiter by now
  expect(resolvedAt).toBe(0); // it does not hold the lock beside the intruder
  await intruder?.release();
  const handle = await waiting;
  expect(handle.fencingToken).toBe(held.fencingToken + 3);
  expect(handle.signal.aborted).toBe(false);
  expect(await holder.holdCount(handle.owner)).toBe(1);
  await handle.release();
}

/**
 * `forceRelease()` hands the freed lock to the parked head as a release does: the waiter holds it
 * without asking again, instead of sleeping out its park (here up to the holder's 30 s lease).
 */
export async function forceReleaseHandsOver(bed: TestBed, kind: ParkingKind): Promise<void> {
  const prefix = freshPrefix();
  const holder = kind.lockOf(bed.client({ prefix }));
  // What each waiter's client sends, counted by the client: the server's total would also hold the
  // waiter behind re-parking after its `behind` word, whenever that lands.
  const sent = { head: { scripts: 0, pops: 0 }, behind: { scripts: 0, pops: 0 } };
  const waiterOf = (who: keyof typeof sent) =>
    kind.lockOf(
      bed.client({
        prefix,
        wait: { mode: "push", parkMs: 30_000 },
        observer: {
          onAttempt: () => {
            sent[who].scripts += 1;
          },
          onBlocking: () => {
            sent[who].pops += 1;
          },
        },
      }),
    );
  const held = await holder.acquire({ leaseMs: 30_000 });
  const waiting = waiterOf("head").acquire({ leaseMs: 30_000 });
  await until(async () => (await parkedCount(bed, prefix, kind)) === 1);
  // A second waiter behind it: the hold handed over by the force release must be handed on.
  const behind = waiterOf("behind").acquire({ leaseMs: 10_000 });
  await until(async () => (await parkedCount(bed, prefix, kind)) === 2);
  await sleepMs(50); // its park is open at the server
  const headBefore = { ...sent.head };
  expect(await kind.lockOf(bed.client({ prefix })).forceRelease()).toBe(true);
  const handle = await Promise.race([waiting, sleepMs(10_000).then(() => null)]);
  expect(handle, "the parked waiter was not handed the lock").not.toBeNull();
  // The force release handed over: the waiter sent nothing more.
  expect(sent.head).toEqual(headBefore);
  expect(handle?.fencingToken).toBe(held.fencingToken + 1);
  expect(await holder.holdCount(handle?.owner ?? "")).toBe(1);
  await sleepMs(50);
  const behindScripts = sent.behind.scripts;
  await handle?.release();
  // Its release hands on to the waiter behind (which would otherwise sleep out its 30 s park):
  // the waiter behind holds it from its park, without asking again.
  const next = await Promise.race([behind, sleepMs(5_000).then(() => null)]);
  expect(next, "the waiter behind was not handed the lock").not.toBeNull();
  expect(sent.behind.scripts).toBe(behindScripts);
  await next?.release();
  expect(await holder.isLocked()).toBe(false);
  await expect(held.release()).rejects.toThrow(LockNotHeldError);
}

/**
 * Two acquisitions of one owner park at once (one owner per request, `Promise.all` of two
 * tasks): the server keeps one parked registration per owner, so the release hands the lock to
 * one of them; the other re-enters at once instead of sleeping out its park (30 s here).
 */
export async function concurrentAcquisitionsOfOneOwner(
  bed: TestBed,
  kind: ParkingKind,
): Promise<void> {
  const prefix = freshPrefix();
  const holder = kind.lockOf(bed.client({ prefix }));
  const client = bed.client({ prefix, wait: { mode: "push", parkMs: 30_000 } });
  const held = await holder.acquire({ leaseMs: 30_000 });
  const both = client.scope(() =>
    Promise.all([
      kind.lockOf(client).acquire({ leaseMs: 10_000 }),
      sleepMs(100).then(() => kind.lockOf(client).acquire({ leaseMs: 10_000 })),
    ]),
  );
  await until(async () => (await parkedCount(bed, prefix, kind)) === 1);
  await sleepMs(200); // both have parked
  await held.release();
  const handles = await Promise.race([both, sleepMs(10_000).then(() => null)]);
  expect(handles, "the owner's second acquisition slept out its park").not.toBeNull();
  const [first, second] = handles ?? [];
  expect(first?.owner).toBe(second?.owner);
  expect(first?.fencingToken).toBe(held.fencingToken + 1);
  expect(second?.fencingToken).toBe(held.fencingToken + 1);
  expect(await holder.holdCount(first?.owner ?? "")).toBe(2);
  await first?.release();
  await second?.release();
  expect(await holder.isLocked()).toBe(false);
  // Every park ended: no wake list, no registration left behind.
  await until(async () => (await bed.redis().keys(`${prefix}:{${kind.name}}:wake:*`)).length === 0);
  expect(await parkedCount(bed, prefix, kind)).toBe(0);
}

/**
 * Issue 41, case 6 (the round-2 check): the parked head aborts, then the holder releases: the
 * parked waiter behind it is handed the lock at that release (reported: 4.76–4.82 s later, when
 * its park ended). `race`: the abort is sent with the release, so the release may grant the
 * aborting head first, whose leave then passes the hold on.
 */
export async function abortedHeadSkipped(
  bed: TestBed,
  kind: ParkingKind,
  race: boolean,
): Promise<void> {
  const prefix = freshPrefix();
  const holder = kind.lockOf(bed.client({ prefix }));
  const held = await holder.acquire({ leaseMs: 10_000 });
  const abort = new AbortController();
  const head = kind
    .lockOf(bed.client({ prefix, wait: { mode: "push" } }))
    .acquire({ leaseMs: 10_000, signal: abort.signal });
  head.catch(() => {});
  await until(async () => (await parkedCount(bed, prefix, kind)) === 1);
  const behind = kind
    .lockOf(bed.client({ prefix, wait: { mode: "push" } }))
    .acquire({ leaseMs: 10_000 });
  await until(async () => (await parkedCount(bed, prefix, kind)) === 2);
  await sleepMs(100); // both pops are open at the server
  let releasedAt = Date.now();
  // guard: the scenario's two orders (release with the abort, or after it); both assert the abort and the hand-off below.
  if (race) {
    const released = held.release();
    abort.abort();
    await released;
  } else {
    abort.abort();
    await expect(head).rejects.toBeInstanceOf(LockAbortedError);
    releasedAt = Date.now();
    await held.release();
  }
  await expect(head).rejects.toBeInstanceOf(LockAbortedError);
  const handle = await behind;
  expect(Date.now() - releasedAt).toBeLessThan(1_000);
  // Straight from the release, or (racing, as it mostly runs) through the aborted head's leave,
  // which passed on the grant the release had made to it.
  const tokens = race ? [held.fencingToken + 1, held.fencingToken + 2] : [held.fencingToken + 1];
  expect(tokens).toContain(handle.fencingToken);
  expect(await holder.holdCount(handle.owner)).toBe(1);
  await handle.release();
  expect(await holder.isLocked()).toBe(false);
}

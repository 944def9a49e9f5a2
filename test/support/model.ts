/**
 * The harness of the model tests (test/node/<kind>/model.test.ts): fast-check draws sequences of
 * a kind's commands, and each command, run on a fresh lock and on its reference model, checks
 * that the two agree. A kind's test keeps its commands, its model and its properties; the drawing,
 * the runs and what every kind's real side needs (owners, expiring a key, a handle's release
 * outcome, a context for calling scripts directly) are here once.
 */
import type { Redis } from "@upstash/redis";
import fc from "fast-check";
import type { OperationContext } from "../../src/hold/context.js";
import { LockClient, LockNotHeldError } from "../../src/index.js";
import { sleep } from "../../src/platform.js";

export interface ModelCheck<M extends object, R> {
  /** The commands to draw from; a command listed twice is drawn twice as often. */
  readonly commands: ReadonlyArray<fc.Arbitrary<fc.AsyncCommand<M, R>>>;
  readonly maxCommands: number;
  /** "max" draws long sequences as often as short ones (queues need them to grow). */
  readonly size?: "max";
  /** Commands run after every drawn sequence (e.g. a last look at the whole state). */
  readonly after?: ReadonlyArray<fc.AsyncCommand<M, R>>;
  /** The model and the real system of run `run` (1, 2, …): a fresh lock each time. */
  setup(run: number): { model: M; real: R };
  readonly numRuns: number;
  readonly seed: number;
  readonly verbose?: boolean;
}

/** Runs `check.numRuns` drawn sequences; fails with the shortest sequence that disagrees. */
export async function checkModel<M extends object, R>(check: ModelCheck<M, R>): Promise<void> {
  const commands = fc.commands([...check.commands], {
    maxCommands: check.maxCommands,
    ...(check.size === undefined ? {} : { size: check.size }),
  });
  let run = 0;
  await fc.assert(
    fc.asyncProperty(commands, async (cmds) => {
      run += 1;
      const { model, real } = check.setup(run);
      await fc.asyncModelRun(() => ({ model, real }), [...cmds, ...(check.after ?? [])]);
    }),
    {
      numRuns: check.numRuns,
      seed: check.seed,
      ...(check.verbose === undefined ? {} : { verbose: check.verbose }),
    },
  );
}

/** `count` fresh owner tokens: owner i of the model is owners[i]. */
export function newOwners(count: number): string[] {
  return Array.from({ length: count }, () => LockClient.newOwner());
}

/** One empty list per owner (the handles each holds). */
export function perOwner<T>(count: number): T[][] {
  return Array.from({ length: count }, () => []);
}

/** `done` when the handle's call succeeded, "not-held" when its hold was gone; else the error. */
export function heldOutcome<T extends string>(call: Promise<void>, done: T): Promise<unknown> {
  return call.then(
    () => done,
    (e: unknown) => (e instanceof LockNotHeldError ? "not-held" : e),
  );
}

/** What the scripts' own functions need, for tests that call them without a client. */
export function scriptContext(redis: Redis): OperationContext {
  return { redis, retry: { retries: 2, delayMs: 20 }, operationTtlMs: 60_000 };
}

/** Lets `key` expire now, as a lease that ran out. */
export async function expireNow(redis: Redis, key: string): Promise<void> {
  await redis.pexpire(key, 1);
  await sleep(5);
}

/**
 * The counting semaphore (Redisson RSemaphore / RPermitExpirableSemaphore): a capacity of
 * permits kept in Redis, and acquisitions that each take some permits as one hold with its own
 * lease and fencing token. A crashed holder's permits come back when its lease ends (server
 * time); waiters queue first come, first served and wait by polling, or in push mode parked on
 * one of the semaphore's hand-off channels until a release, a leaving waiter or a raised capacity
 * grants them permits (docs/semaphore.md). The hold's lease, watchdog, events and handle come
 * from the shared acquisition path (src/wait/acquire.ts).
 */
import {
  LockBudgetExceededError,
  LockInputError,
  LockWaitTimeoutError,
  SemaphoreCapacityError,
  SemaphoreNotInitializedError,
} from "../../errors.js";
import { PARK_PAST_LEASE_MS } from "../../hold/queue/hand-off.js";
import { newOperationId } from "../../platform.js";
import { checkCount, checkLockName, checkOptions } from "../../validate.js";
import {
  type AcquireOptions,
  type AcquisitionSpec,
  acquireOrNull,
  acquireOrThrow,
  checkWaiterTimeout,
  type QueuedKind,
  type QueueOptions,
  queuedAttempts,
} from "../../wait/acquire.js";
import type { QueuedAttemptOutcome, WaitPlan } from "../../wait/attempt.js";
import { PermitPacer, type PermitView } from "../../wait/permits.js";
import type { TurnView } from "../../wait/poll.js";
import type { LockRuntime } from "../../wait/runtime.js";
import { abandonPermits } from "./abandon.js";
import { attemptPermits, type PermitAttempt } from "./acquire.js";
import {
  type CapacityChange,
  changeCapacity,
  readSemaphore,
  type SemaphoreState,
} from "./capacity.js";
import { extendPermits } from "./extend.js";
import { permitParkBoundMs } from "./hand-off.js";
import { type SemaphoreKeys, semaphoreKeys } from "./keys.js";
import { type PermitHandle, permitHandle } from "./permit-handle.js";
import { releasePermits } from "./release.js";

/** Options of `client.semaphore(name, options)`. */
export interface SemaphoreOptions extends QueueOptions {
  /**
   * The capacity the first acquisition sets when none is set yet (in the same request, as
   * `trySetPermits` would): a semaphore that needs no separate setup step. A capacity already
   * set is left alone; change it with `setPermits` / `addPermits`.
   * @default none: acquiring before a capacity is set throws SemaphoreNotInitializedError
   */
  initialPermits?: number;
}

/** Options of `acquire()` / `tryAcquire()` / `withPermits()`. */
export interface PermitOptions extends AcquireOptions {
  /**
   * How many permits this acquisition takes, as one hold (one lease, one release).
   * @default 1
   */
  permits?: number;
}

const SEMAPHORE_KEYS = ["initialPermits", "waiterTimeoutMs"] as const;
/** Largest capacity and permits count accepted. */
const MAX_PERMITS = 1_000_000_000;

/**
 * A counting semaphore, from `client.semaphore(name)`: a capacity of permits in Redis, each
 * acquisition a hold of some permits with its own lease and fencing token (a PermitHandle).
 */
export class Semaphore {
  /** The semaphore's name. */
  readonly name: string;
  /** How long a waiter keeps its place in the queue without polling, in ms. */
  readonly waiterTimeoutMs: number;
  readonly #runtime: LockRuntime;
  readonly #keys: SemaphoreKeys;
  readonly #initialPermits: number | undefined;

  /** @internal Use `client.semaphore(name, options)`. */
  constructor(runtime: LockRuntime, name: unknown, options?: SemaphoreOptions) {
    this.name = checkLockName(name);
    const given = checkOptions<SemaphoreOptions>(options, "semaphore options", SEMAPHORE_KEYS);
    this.waiterTimeoutMs = checkWaiterTimeout(given.waiterTimeoutMs);
    this.#initialPermits =
      given.initialPermits === undefined
        ? undefined
        : checkCount(given.initialPermits, "initialPermits", 1, MAX_PERMITS);
    this.#runtime = runtime;
    this.#keys = semaphoreKeys(runtime.prefix, this.name);
  }

  /**
   * Takes `permits` (default 1) as one hold, waiting in turn as long as `waitMs` allows
   * (default: until acquired, aborted or out of poll budget). Throws LockWaitTimeoutError,
   * LockAbortedError or LockBudgetExceededError when the wait ends first (having left the
   * queue), SemaphoreNotInitializedError when no capacity is set, SemaphoreCapacityError when
   * `permits` exceeds the capacity.
   * @example
   * await using permit = await client.semaphore("upstream").acquire({ leaseMs: 10_000 });
   */
  async acquire(options?: PermitOptions): Promise<PermitHandle> {
    const { permits, rest } = splitPermits(options);
    try {
      const hold = await acquireOrThrow(this.#runtime, this.name, rest, (plan) =>
        this.#spec(permits, plan),
      );
      return permitHandle(hold, permits);
    } catch (error) {
      throw inSemaphoreWords(error, this.name, permits);
    }
  }

  /**
   * Like `acquire()`, but resolves to null when `waitMs` (default 0) passes. With `waitMs: 0`
   * it makes one attempt and never queues: it succeeds only if the permits are free after what
   * every waiter ahead asks for.
   */
  async tryAcquire(options?: PermitOptions): Promise<PermitHandle | null> {
    const { permits, rest } = splitPermits(options);
    const hold = await acquireOrNull(this.#runtime, rest, (plan) => this.#spec(permits, plan));
    return hold === null ? null : permitHandle(hold, permits);
  }

  /**
   * Acquires, runs `fn` with the handle and releases in `finally`, like `await using`: `fn`'s
   * result or error is what you get; a release that finds the permits gone aborts `signal`
   * instead of throwing.
   * @example
   * const reply = await tenantLimit.withPermits(() => fetch(upstream), { waitMs: 2_000 });
   */
  async withPermits<T>(
    fn: (permits: PermitHandle) => Promise<T> | T,
    options?: PermitOptions,
  ): Promise<T> {
    if (typeof fn !== "function") {
      throw new LockInputError("withPermits(fn, options): fn must be a function.");
    }
    await using held = await this.acquire(options);
    return await fn(held);
  }

  /**
   * Sets the capacity to `permits` if none is set; true when it did. A capacity already set is
   * left alone whatever is available, also when every permit is taken (redisson#4678).
   */
  async trySetPermits(permits: number): Promise<boolean> {
    const n = checkCount(permits, "permits", 0, MAX_PERMITS);
    return (await this.#change("trySet", n)).done;
  }

  /** Sets the capacity to `permits`. Holds keep their permits and leases (see docs). */
  async setPermits(permits: number): Promise<void> {
    await this.#change("set", checkCount(permits, "permits", 0, MAX_PERMITS));
  }

  /**
   * Adds `permits` to the capacity (negative: removes; no capacity counts as 0) and returns the
   * new capacity. Throws SemaphoreCapacityError, changing nothing, when it would go below 0.
   */
  async addPermits(permits: number): Promise<number> {
    const n = checkCount(permits, "permits", -MAX_PERMITS, MAX_PERMITS);
    const result = await this.#change("add", n);
    if (result.done) return result.value;
    throw new SemaphoreCapacityError(
      this.name,
      result.capacity,
      `Semaphore "${this.name}": adding ${n} permits to a capacity of ${result.capacity} would make it negative.`,
    );
  }

  /**
   * Takes every available permit for good: lowers the capacity to what live holds have and
   * returns how many permits it removed (Redisson drainPermits). Holders keep theirs.
   */
  async drainPermits(): Promise<number> {
    const result = await this.#change("drain", 0);
    return result.done ? result.value : 0;
  }

  /** Capacity less the permits of live holds, at least 0 (0 when no capacity is set). */
  async availablePermits(): Promise<number> {
    return (await this.state()).available;
  }

  /** Capacity, permits held, holds, available permits and waiters, in one read. */
  state(): Promise<SemaphoreState> {
    return readSemaphore(this.#runtime.ctx, this.#keys);
  }

  #change(change: CapacityChange, n: number) {
    return changeCapacity(this.#runtime.ctx, this.#keys, change, n, newOperationId());
  }

  /** The spec of one acquisition of `permits`: its attempts, its hold's control and renewal. */
  #spec(permits: number, plan: WaitPlan): AcquisitionSpec {
    const runtime = this.#runtime;
    const { ctx } = runtime;
    const keys = this.#keys;
    const { name, waiterTimeoutMs } = this;
    const initialPermits = this.#initialPermits;
    // Releases in flight by hold: a renewal that finds its hold gone waits for the release's
    // answer, so that a release racing a renewal is not reported lost (redis-semaphore#205).
    const releasing = new Map<number, Promise<unknown>>();
    const pacer = new PermitPacer(plan.policy, waiterTimeoutMs);
    const waiters: QueuedKind<PermitTurnView> = {
      attempt: async (owner, leaseMs, operationId, terms) =>
        this.#outcome(
          await attemptPermits(ctx, keys, owner, permits, leaseMs, operationId, {
            timeoutMs: terms.timeoutMs,
            initialPermits,
            claimMs: terms.claimMs,
            wakeBy: terms.wakeBy === "sub" ? `sub${terms.registration}.${terms.shard}` : "",
          }),
          permits,
          { claimMs: terms.claimMs, leaseMs },
        ),
      pacing: {
        by: "kind",
        delayMs: (view) => pacer.next(view),
      },
      // A hold of the owner's lets none of its other tasks in: each takes permits of its own.
      reentrant: false,
      leave: (owner, operationId) => abandonPermits(ctx, keys, owner, permits, operationId),
    };

    return {
      runtime,
      name,
      noun: "semaphore",
      // Renewable from anywhere by semaphore.extend (the Durable Object watchdog does); every
      // hold renews on its own, as each has its own fencing token and lease.
      watch: { lockKey: keys.leases, kind: "semaphore" },
      // Push mode announces grants on the semaphore's channels (no wake lists: pops poll).
      ...queuedAttempts(
        runtime,
        { lock: keys.leases, handOffChannels: keys.handOffChannels },
        waiters,
        plan,
        waiterTimeoutMs,
      ),
      control: (owner, fencingToken, grantOf) => ({
        extend: (ms) => extendPermits(ctx, keys, owner, fencingToken, ms),
        release: async (operationId) => {
          const sent = releasePermits(
            ctx,
            keys,
            owner,
            fencingToken,
            operationId,
            grantOf,
            permits,
          );
          releasing.set(fencingToken, sent);
          try {
            return await sent;
          } finally {
            releasing.delete(fencingToken);
          }
        },
      }),
      renew: async (owner, leaseMs, { fencingToken, claim }) => {
        const held = await extendPermits(ctx, keys, owner, fencingToken, leaseMs, claim);
        // A release sent meanwhile decides: when it answers, the watchdog is stopped.
        if (!held) await releasing.get(fencingToken)?.catch(() => {});
        return held;
      },
    };
  }

  /**
   * What the shared flow makes of one attempt's answer, sent with `grant` (its claim window, 0
   * when it polls, and its lease).
   */
  #outcome(
    outcome: PermitAttempt,
    permits: number,
    grant: { readonly claimMs: number; readonly leaseMs: number },
  ): QueuedAttemptOutcome<PermitTurnView> {
    switch (outcome.kind) {
      case "acquired":
        return outcome;
      case "spent":
        return { kind: "busy", holderTtlMs: null, queue: notQueued, operationSpent: true };
      case "uninitialized":
        return { kind: "refused", error: new SemaphoreNotInitializedError(this.name) };
      case "tooMany":
        return {
          kind: "refused",
          error: new SemaphoreCapacityError(
            this.name,
            outcome.capacity,
            `Semaphore "${this.name}" has ${outcome.capacity} permits in all; an acquisition of ${permits} could never be served.`,
          ),
        };
      case "busy": {
        const holderTtlMs = outcome.soonestLeaseEndMs;
        return {
          kind: "busy",
          holderTtlMs,
          queue: {
            ...notQueued,
            ...parkTurn(outcome, grant.claimMs, grant.leaseMs),
            waiters: outcome.waiters,
            missing: outcome.missing,
            permitGapMs: outcome.permitGapMs,
            soonestLeaseEndMs: holderTtlMs,
          },
        };
      }
    }
  }
}

/**
 * A busy answer as the queue flow sees it: a lock's turn, which only bounds a park (see
 * parkTurn), and what permit pacing reads.
 */
type PermitTurnView = TurnView & PermitView;

/**
 * The turn a busy answer gives the shared park bound (parkBoundMs, src/wait/push/parking.ts: the
 * holder's lease end plus PARK_PAST_LEASE_MS at the head): for a waiter that registered as parked
 * (`claimMs` > 0), at the head with a "lease" that ends PARK_PAST_LEASE_MS before the semaphore's
 * own bound (permitParkBoundMs: within a grant's lease, past the soonest lease end), so the park
 * ends by that bound. Else the soonest lease end where it is queued (what polling reads).
 */
function parkTurn(
  outcome: Extract<PermitAttempt, { kind: "busy" }>,
  claimMs: number,
  leaseMs: number,
): Pick<TurnView, "position" | "holderTtlMs"> {
  const { position, soonestLeaseEndMs } = outcome;
  if (claimMs <= 0 || position < 0) return { position, holderTtlMs: soonestLeaseEndMs };
  const boundMs = permitParkBoundMs(soonestLeaseEndMs, position, claimMs, leaseMs);
  return { position: 0, holderTtlMs: Math.max(0, boundMs - PARK_PAST_LEASE_MS) };
}

const notQueued: PermitTurnView = {
  position: -1,
  locked: true,
  holderTtlMs: null,
  holdMs: null,
  holdDeviationMs: null,
  cycleMs: null,
  heldForMs: null,
  missing: 1,
  permitGapMs: null,
  soonestLeaseEndMs: null,
};

/** `permits` (validated, default 1) and the options the shared flow validates. */
function splitPermits(options: PermitOptions | undefined): {
  permits: number;
  rest: AcquireOptions | undefined;
} {
  if (options === null || typeof options !== "object" || !("permits" in options)) {
    return { permits: 1, rest: options };
  }
  const { permits, ...rest } = options;
  return {
    permits: permits === undefined ? 1 : checkCount(permits, "permits", 1, MAX_PERMITS),
    rest,
  };
}

/** A wait's timeout as a semaphore's: permits not free, not a lock held by another owner. */
function inSemaphoreWords(error: unknown, name: string, permits: number): unknown {
  if (!(error instanceof LockWaitTimeoutError)) return error;
  const asked = permits === 1 ? "1 permit" : `${permits} permits`;
  if (error instanceof LockBudgetExceededError) {
    error.message = `Gave up on semaphore "${name}" (${asked}) after ${error.polls} requests (the poll budget, option wait.maxPolls).`;
  } else if (error.name === "LockWaitTimeoutError") {
    const soonest =
      error.holderTtlMs === null ? "" : ` (the soonest hold ends in ${error.holderTtlMs} ms)`;
    error.message = `Semaphore "${name}": ${asked} not free after waiting ${error.waitMs} ms${soonest}.`;
  }
  return error;
}

/**
 * Every error edgelock throws. Each has a stable literal `name` to match on where `instanceof`
 * fails across bundles: `isEdgelockError(err) && err.name === "LockWaitTimeoutError"` narrows.
 * A class with subclasses types `name` as the union of its own and theirs.
 */

/** The `name` of every error class edgelock throws. */
export type EdgelockErrorName = AnyEdgelockError["name"];

/** Base class of all edgelock errors. */
export class EdgelockError extends Error {
  override readonly name: "EdgelockError" | EdgelockErrorName = "EdgelockError";
}

/** Bad input (a name, a duration, an option) detected before any request was sent. */
export class LockInputError extends EdgelockError {
  override readonly name = "LockInputError" as const;
}

/**
 * An owner scope (`client.scope()`, hono's `withLock()` with `client`) needs AsyncLocalStorage:
 * on Workers, add the `nodejs_compat` flag; on Vercel's Edge runtime, set the global
 * `AsyncLocalStorage` from `node:async_hooks`; else pass `owner`. Thrown before any request,
 * since unscoped a nested acquisition of the request's own lock would wait for itself.
 */
export class LockScopeUnavailableError extends EdgelockError {
  override readonly name = "LockScopeUnavailableError" as const;
}

/** The lock stayed busy until `waitMs` passed. Nothing is held and nothing is queued. */
export class LockWaitTimeoutError extends EdgelockError {
  override readonly name:
    | "LockWaitTimeoutError"
    | "LockBudgetExceededError"
    | "QuorumWaitTimeoutError" = "LockWaitTimeoutError";
  constructor(
    readonly lockName: string,
    readonly waitMs: number,
    /** The holder's remaining lease at the last attempt, in ms (null when unknown). */
    readonly holderTtlMs: number | null,
    /**
     * The same LockClient held the lock under another owner while this wait ran: the caller
     * most likely waited for its own hold (a nested acquisition outside `client.scope()`).
     */
    readonly heldByThisClient: boolean = false,
  ) {
    const lease = holderTtlMs === null ? "" : ` (the holder's lease ends in ${holderTtlMs} ms)`;
    super(
      `Lock "${lockName}" is still held by another owner ${heldByThisClient ? "of this LockClient " : ""}after waiting ${waitMs} ms${lease}.` +
        (heldByThisClient
          ? " Likely your own hold, taken outside this acquisition's owner scope: run both in one client.scope(), or pass the first hold's owner."
          : ""),
    );
  }
}

/**
 * The poll budget (`wait.maxPolls`) ran out before the lock came free. A LockWaitTimeoutError,
 * so one `catch` covers both; `waitMs` is how long it had waited.
 */
export class LockBudgetExceededError extends LockWaitTimeoutError {
  override readonly name = "LockBudgetExceededError" as const;
  constructor(
    lockName: string,
    readonly polls: number,
    holderTtlMs: number | null,
    waitedMs: number,
  ) {
    super(lockName, waitedMs, holderTtlMs);
    this.message =
      `Gave up on lock "${lockName}" after ${polls} requests (the poll budget, option wait.maxPolls); ` +
      "each poll is a Workers subrequest and a billed Redis command.";
  }
}

/** The caller's AbortSignal fired while acquiring. Nothing is held. */
export class LockAbortedError extends EdgelockError {
  override readonly name = "LockAbortedError" as const;
}

/** The operation needs a hold that does not exist (released, expired, or someone else's). */
export class LockNotHeldError extends EdgelockError {
  override readonly name = "LockNotHeldError" as const;
}

/**
 * A held lock was lost: its renewal found it gone or taken, or renewals failed until the lease
 * had surely passed. It is the `reason` of the handle's aborted `signal`.
 */
export class LockLostError extends EdgelockError {
  override readonly name: "LockLostError" | "QuorumLostError" = "LockLostError";
}

/**
 * A read-lock holder asked for the write lock without holding it: two upgrading readers would
 * wait for each other forever, so it fails at once. Release the reads first, or write then
 * downgrade.
 */
export class LockUpgradeError extends EdgelockError {
  override readonly name = "LockUpgradeError" as const;
}

/**
 * A semaphore was asked for permits before it had a capacity: call `trySetPermits(n)` or
 * `setPermits(n)` first, or create it with `initialPermits`. Nothing is held or queued.
 */
export class SemaphoreNotInitializedError extends EdgelockError {
  override readonly name = "SemaphoreNotInitializedError" as const;
  constructor(readonly semaphoreName: string) {
    super(
      `Semaphore "${semaphoreName}" has no capacity: call trySetPermits(n) or setPermits(n) first, ` +
        "or create it with { initialPermits }.",
    );
  }
}

/**
 * A semaphore's capacity refused a request: an acquisition asked for more permits than the
 * capacity (it could never be served, and waiting at the head of the queue would block everyone
 * behind it), or `addPermits` would make the capacity negative. Nothing changed.
 */
export class SemaphoreCapacityError extends EdgelockError {
  override readonly name = "SemaphoreCapacityError" as const;
  constructor(
    readonly semaphoreName: string,
    /** The capacity when the request was refused. */
    readonly capacity: number,
    message: string,
  ) {
    super(message);
  }
}

/** HTTP Redis failed or answered something a lock script never returns. */
export class LockBackendError extends EdgelockError {
  override readonly name: "LockBackendError" | "QuorumUnreachableError" = "LockBackendError";
}

/** How the databases of a RedLock answered one acquisition attempt. */
export interface QuorumTally {
  readonly databases: number;
  /** Databases that must grant the lock: a majority, floor(databases / 2) + 1. */
  readonly quorum: number;
  readonly acquired: number;
  /** Databases where another owner holds it. */
  readonly busy: number;
  /** Databases that failed, or did not answer within the response timeout. */
  readonly unreachable: number;
  /** How long the attempt took, in ms (client clock). */
  readonly elapsedMs: number;
}

function describeTally(tally: QuorumTally): string {
  return (
    `${tally.acquired} of ${tally.databases} databases granted it (${tally.quorum} needed), ` +
    `${tally.busy} held by another owner, ${tally.unreachable} unreachable`
  );
}

/**
 * RedLock contention: other owners kept the lock on too many databases until `waitMs` passed.
 * Nothing is held. `tally` is the last attempt's count.
 */
export class QuorumWaitTimeoutError extends LockWaitTimeoutError {
  override readonly name = "QuorumWaitTimeoutError" as const;
  constructor(
    lockName: string,
    waitMs: number,
    holderTtlMs: number | null,
    readonly tally: QuorumTally,
  ) {
    super(lockName, waitMs, holderTtlMs);
    this.message =
      `RedLock "${lockName}" got no majority within ${waitMs} ms: at the last attempt ` +
      `${describeTally(tally)}` +
      (tally.acquired >= tally.quorum
        ? `, but only after ${tally.elapsedMs} ms, when its validity had run out (use a longer lease).`
        : ".");
  }
}

/**
 * RedLock outage: too many databases failed or stayed silent for a majority, so waiting would not
 * help. Nothing is held (stray holds were rolled back or expire with their lease).
 */
export class QuorumUnreachableError extends LockBackendError {
  override readonly name = "QuorumUnreachableError" as const;
  constructor(
    readonly lockName: string,
    readonly tally: QuorumTally,
    readonly failures: readonly { readonly database: number; readonly error: unknown }[],
  ) {
    super(
      `RedLock "${lockName}": ${tally.unreachable} of ${tally.databases} databases failed or did ` +
        `not answer in time, so no majority of ${tally.quorum} was possible (${describeTally(tally)}).` +
        failures
          .slice(0, 3)
          .map(
            ({ database, error }) =>
              ` Database ${database}: ${error instanceof Error ? error.message : String(error)}`,
          )
          .join(""),
    );
  }
}

/**
 * A held RedLock lost its majority: renewals or `extend()` found it on fewer than a quorum of
 * databases, or no majority confirmed it before its validity ran out. The `reason` of the
 * handle's aborted `signal`.
 */
export class QuorumLostError extends LockLostError {
  override readonly name = "QuorumLostError" as const;
}

/** Every error class edgelock throws (not the abstract base), as a union `err.name` narrows. */
export type AnyEdgelockError =
  | LockInputError
  | LockScopeUnavailableError
  | LockWaitTimeoutError
  | LockBudgetExceededError
  | LockAbortedError
  | LockNotHeldError
  | LockLostError
  | LockUpgradeError
  | SemaphoreNotInitializedError
  | SemaphoreCapacityError
  | LockBackendError
  | QuorumWaitTimeoutError
  | QuorumUnreachableError
  | QuorumLostError;

const ERROR_NAMES: ReadonlySet<string> = new Set<EdgelockErrorName>([
  "LockInputError",
  "LockScopeUnavailableError",
  "LockWaitTimeoutError",
  "LockBudgetExceededError",
  "LockAbortedError",
  "LockNotHeldError",
  "LockLostError",
  "LockUpgradeError",
  "SemaphoreNotInitializedError",
  "SemaphoreCapacityError",
  "LockBackendError",
  "QuorumWaitTimeoutError",
  "QuorumUnreachableError",
  "QuorumLostError",
]);

/**
 * Whether `value` is an edgelock error, by class or, across bundles where `instanceof` fails, by
 * its `name`. Narrows to the union of the classes, so `err.name === "…"` then picks one.
 */
export function isEdgelockError(value: unknown): value is AnyEdgelockError {
  return value instanceof Error && ERROR_NAMES.has(value.name);
}

/**
 * Every error edgelock throws is one of these classes, exported from the package root. Each has
 * a stable `name` to match on (`err.name === "LockWaitTimeoutError"`), since `instanceof` can
 * fail across bundles.
 */

/** Base class of all edgelock errors. */
export class EdgelockError extends Error {
  override name = "EdgelockError";
}

/** Bad input (a name, a duration, an option) detected before any request was sent. */
export class LockInputError extends EdgelockError {
  override name = "LockInputError";
}

/** The lock stayed busy until `waitMs` passed. Nothing is held and nothing is queued. */
export class LockWaitTimeoutError extends EdgelockError {
  override name = "LockWaitTimeoutError";
  constructor(
    readonly lockName: string,
    readonly waitMs: number,
    /** The holder's remaining lease at the last attempt, in ms (null when unknown). */
    readonly holderTtlMs: number | null,
  ) {
    super(
      `Lock "${lockName}" is still held by another owner after waiting ${waitMs} ms` +
        (holderTtlMs === null ? "." : ` (the holder's lease ends in ${holderTtlMs} ms).`),
    );
  }
}

/** The poll budget ran out before the lock came free. Raise `wait.maxPolls` or wait less. */
export class LockBudgetExceededError extends EdgelockError {
  override name = "LockBudgetExceededError";
  constructor(
    readonly lockName: string,
    readonly polls: number,
    readonly holderTtlMs: number | null,
  ) {
    super(
      `Gave up on lock "${lockName}" after ${polls} requests (the poll budget, option wait.maxPolls); ` +
        "each poll is a Workers subrequest and a billed Redis command.",
    );
  }
}

/** The caller's AbortSignal fired while acquiring. Nothing is held. */
export class LockAbortedError extends EdgelockError {
  override name = "LockAbortedError";
}

/** The operation needs a hold that does not exist (released, expired, or someone else's). */
export class LockNotHeldError extends EdgelockError {
  override name = "LockNotHeldError";
}

/**
 * A held lock was lost: its renewal found it gone or taken, or renewals failed until the lease
 * had surely passed. It is the `reason` of the handle's aborted `signal`.
 */
export class LockLostError extends EdgelockError {
  override name = "LockLostError";
}

/** HTTP Redis failed or answered something a lock script never returns. */
export class LockBackendError extends EdgelockError {
  override name = "LockBackendError";
}

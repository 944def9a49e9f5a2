/**
 * Failures after the handler are reported, never turned into an error response: the work is
 * done, and an error status would make the sender repeat it.
 */

export interface MiddlewareFailure {
  /** Which step failed: storing the response for replays, or releasing the lock. */
  readonly kind: "store" | "release";
  /** The lock name (withLock) or the idempotency key (idempotency). */
  readonly key: string;
  readonly error: unknown;
  /** What the middleware did about it, in one sentence. */
  readonly consequence: string;
}

/** The default `onFailure`: one `console.error` line (Workers logs, Node stderr). */
export function logFailure(failure: MiddlewareFailure): void {
  const message = failure.error instanceof Error ? failure.error.message : String(failure.error);
  console.error(
    `edgelock/hono: ${failure.kind} failed for "${failure.key}": ${message}. ${failure.consequence}`,
  );
}

/** Calls the reporter without letting it break the response. */
export async function report<C>(
  onFailure: (failure: MiddlewareFailure, c: C) => void | Promise<void>,
  failure: MiddlewareFailure,
  c: C,
): Promise<void> {
  try {
    await onFailure(failure, c);
  } catch {
    // A throwing reporter must not turn a delivered response into an error.
  }
}

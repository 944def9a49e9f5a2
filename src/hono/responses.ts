/**
 * The middleware's own answers: RFC 9457 problem details, and Retry-After from the holds seen
 * and the holder's pttl.
 */

/** Whole seconds until a holder's lease ends, at least 1 (Retry-After has no fractions). */
export function retryAfterSeconds(holderTtlMs: number | null): number {
  if (holderTtlMs === null || holderTtlMs <= 0) return 1;
  return Math.max(1, Math.ceil(holderTtlMs / 1000));
}

/** An `application/problem+json` response. */
export function problem(
  status: number,
  title: string,
  detail: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify({ type: "about:blank", title, status, detail }), {
    status,
    headers: { "content-type": "application/problem+json", ...headers },
  });
}

/** How many recent hold durations a middleware keeps for its watchdog-mode Retry-After. */
const RECENT_HOLDS = 8;

/**
 * Recent hold durations of one middleware in this isolate: in watchdog mode the holder's renewed
 * lease says nothing about when it finishes (a 1 s handler would get Retry-After 30).
 */
export class RecentHolds {
  readonly #durations: number[] = [];

  add(ms: number): void {
    this.#durations.push(ms);
    if (this.#durations.length > RECENT_HOLDS) this.#durations.shift();
  }

  /** The longest recent hold in ms, or null before any hold ended. */
  longest(): number | null {
    return this.#durations.length === 0 ? null : Math.max(...this.#durations);
  }
}

/**
 * Retry-After for a busy lock: the longest recent hold this middleware saw end, never past the
 * holder's remaining lease (a lease is a bound, not an estimate: 300 ms handlers under a 10 s
 * lease would be told 10). Before any hold ended: the remaining lease with a fixed lease; in
 * watchdog mode 1 s, as the renewed lease says nothing of the holder's end.
 */
export function busyRetryAfter(
  holderTtlMs: number | null,
  leaseMode: boolean,
  longestHoldMs: number | null,
): number {
  const guess = longestHoldMs ?? (leaseMode ? holderTtlMs : null) ?? 1_000;
  return retryAfterSeconds(holderTtlMs === null ? guess : Math.min(holderTtlMs, guess));
}

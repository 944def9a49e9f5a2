/** The statistics the bench reports. Pure functions, so that they can be checked by eye. */

/** The p-quantile (0..1) of `values` by the nearest-rank method; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length)));
  return sorted[rank - 1]!;
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

/**
 * Jain's fairness index of `values` (e.g. each contender's total wait): (Σx)² / (n·Σx²).
 * 1 when all are equal, 1/n when one contender takes everything.
 */
export function jainIndex(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sum = values.reduce((total, value) => total + value, 0);
  const squares = values.reduce((total, value) => total + value * value, 0);
  return squares === 0 ? 1 : (sum * sum) / (values.length * squares);
}

/**
 * The ideal serial time of critical sections on one lock: each costs its hold plus one round
 * trip, the time for the next acquire to reach Redis right after the release and its reply to
 * come back (DESIGN.md: "hold + one round trip"), and the run one round trip more: S sections
 * pay the first acquire's round trip, S − 1 hand-offs and the last release's round trip, which
 * no lock can save (a perfect lock scored 96 % at 20 sections of 27 ms without it). The bench
 * uses the holds as the timers delivered them (measured, acquire resolved → release called) and
 * the transport's uncontended round trip under the latency model (median of sequential
 * one-command requests, measured before the runs).
 *
 *   ideal = Σ holds + (sections + 1) × round trip
 *
 * With a fixed hold H this is sections × (mean hold + round trip) + round trip; with varying
 * holds it is the same bound, since the lock can hand off no faster whatever each hold is.
 */
export function idealSerialMs(holdsMs: readonly number[], roundTripMs: number): number {
  return holdsMs.reduce((sum, hold) => sum + hold, 0) + (holdsMs.length + 1) * roundTripMs;
}

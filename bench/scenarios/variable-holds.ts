/**
 * Scenario 5, variable holds: N contenders on one key, whose holds are drawn from a log-normal
 * distribution (mean 50 ms, coefficient of variation 1 by default) instead of a fixed sleep, so
 * that no waiter can time a release from the hold alone. The holds come from a seeded PRNG and
 * are given out in the order the lock is granted: every library gets the same sequence.
 */
import type { BenchBackend } from "../backend/backend.js";
import type { LatencyModel } from "../backend/protocol.js";
import type { Peer, Transport } from "../peers/peer.js";
import { freshKey, timeLimitFor } from "./contention.js";
import { type ContentionResult, runContenders } from "./run-contenders.js";

export interface VariableHoldSettings {
  readonly contenderCounts: readonly number[];
  readonly sectionsPerContender: number;
  readonly meanHoldMs: number;
  /** Standard deviation / mean of the holds. */
  readonly coefficientOfVariation: number;
  readonly seed: number;
}

/** mulberry32: a small, fast, seeded 32-bit PRNG; uniform in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * `count` log-normal holds of the given mean and coefficient of variation, from `seed`:
 * σ² = ln(1 + cv²), μ = ln(mean) − σ²/2, hold = exp(μ + σ·z) with z standard normal (Box–Muller).
 */
export function logNormalHolds(
  count: number,
  meanMs: number,
  coefficientOfVariation: number,
  seed: number,
): number[] {
  const random = seededRandom(seed);
  const variance = Math.log(1 + coefficientOfVariation ** 2);
  const mu = Math.log(meanMs) - variance / 2;
  const sigma = Math.sqrt(variance);
  const holds: number[] = [];
  while (holds.length < count) {
    // 1 − u keeps the logarithm's argument in (0, 1].
    const radius = Math.sqrt(-2 * Math.log(1 - random()));
    const angle = 2 * Math.PI * random();
    holds.push(Math.exp(mu + sigma * radius * Math.cos(angle)));
    if (holds.length < count) holds.push(Math.exp(mu + sigma * radius * Math.sin(angle)));
  }
  return holds;
}

export function describeHolds(settings: VariableHoldSettings): string {
  return `log-normal, mean ${settings.meanHoldMs} ms, CV ${settings.coefficientOfVariation}, seed ${settings.seed}`;
}

export async function runVariableHolds(
  backend: BenchBackend,
  peers: readonly Peer[],
  latency: LatencyModel,
  roundTrips: Readonly<Record<Transport, number>>,
  settings: VariableHoldSettings,
  onSection: () => void,
): Promise<ContentionResult[]> {
  const results: ContentionResult[] = [];
  for (const contenders of settings.contenderCounts) {
    const sections = contenders * settings.sectionsPerContender;
    // One sequence per N, the same for every peer (a failed acquire draws nothing).
    const holds = logNormalHolds(
      sections,
      settings.meanHoldMs,
      settings.coefficientOfVariation,
      settings.seed + contenders,
    );
    for (const peer of peers) {
      const key = freshKey(`variable-holds-n${contenders}`);
      const roundTripMs = roundTrips[peer.transport];
      results.push(
        await runContenders(backend, {
          peer,
          latency,
          roundTripMs,
          contenders,
          keyOf: () => key,
          sectionsPerContender: settings.sectionsPerContender,
          holdMs: settings.meanHoldMs,
          holdOf: (acquisition) => holds[acquisition] ?? settings.meanHoldMs,
          holdModel: describeHolds(settings),
          timeLimitMs: timeLimitFor(sections, settings.meanHoldMs, roundTripMs),
          onSection,
        }),
      );
    }
  }
  return results;
}

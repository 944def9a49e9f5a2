/**
 * Scenario 5, variable holds: N contenders on one key, whose holds are drawn from a log-normal
 * distribution (mean 50 ms, coefficient of variation 1 by default) instead of a fixed sleep, so
 * that no waiter can time a release from the hold alone. The holds come from a seeded PRNG and
 * are given out in the order the lock is granted: every library gets the same sequence.
 */
import { createPrng } from "../../dev/rest/faults.js";
import type { BenchBackend } from "../backend/backend.js";
import type { LatencyModel } from "../backend/protocol.js";
import type { Peer, Transport } from "../peers/peer.js";
import { runContention } from "./contention.js";
import type { ContentionResult } from "./run-contenders.js";

export interface VariableHoldSettings {
  readonly contenderCounts: readonly number[];
  readonly sectionsPerContender: number;
  readonly meanHoldMs: number;
  /** Standard deviation / mean of the holds. */
  readonly coefficientOfVariation: number;
  readonly seed: number;
}

/**
 * `count` log-normal holds of the given mean and coefficient of variation, from `seed` (the
 * dev server's mulberry32 PRNG):
 * σ² = ln(1 + cv²), μ = ln(mean) − σ²/2, hold = exp(μ + σ·z) with z standard normal (Box–Muller).
 */
export function logNormalHolds(
  count: number,
  meanMs: number,
  coefficientOfVariation: number,
  seed: number,
): number[] {
  const random = createPrng(seed);
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

export function runVariableHolds(
  backend: BenchBackend,
  peers: readonly Peer[],
  latency: LatencyModel,
  roundTrips: Readonly<Record<Transport, number>>,
  settings: VariableHoldSettings,
  onSection: () => void,
): Promise<ContentionResult[]> {
  const { meanHoldMs, coefficientOfVariation, seed, sectionsPerContender } = settings;
  return runContention(
    backend,
    peers,
    latency,
    roundTrips,
    {
      contenderCounts: settings.contenderCounts,
      sectionsPerContender,
      holdMs: meanHoldMs,
      label: "variable-holds",
      // One sequence per N, the same for every peer (a failed acquire draws nothing).
      holdsFor: (contenders) => {
        const holds = logNormalHolds(
          contenders * sectionsPerContender,
          meanHoldMs,
          coefficientOfVariation,
          seed + contenders,
        );
        return {
          holdOf: (acquisition) => holds[acquisition] ?? meanHoldMs,
          holdModel: describeHolds(settings),
        };
      },
    },
    onSection,
  );
}

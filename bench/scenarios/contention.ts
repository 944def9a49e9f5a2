/**
 * Scenario 2, contention on one key: for each N, every peer runs N contenders × K sections of
 * hold H on one shared key, side by side under the same latency model.
 */
import type { BenchBackend } from "../backend/backend.js";
import type { LatencyModel } from "../backend/protocol.js";
import type { Peer, Transport } from "../peers/peer.js";
import { type ContentionResult, runContenders } from "./run-contenders.js";

/** Holds that vary from section to section (see ContentionPlan.holdOf). */
export interface HoldSequence {
  readonly holdOf: (acquisition: number) => number;
  readonly holdModel: string;
}

export interface ContentionSettings {
  readonly contenderCounts: readonly number[];
  readonly sectionsPerContender: number;
  /** Hold of every section, or their mean with `holdsFor`. */
  readonly holdMs: number;
  /** The holds of the runs with N contenders, the same for every peer. Default: `holdMs` each. */
  readonly holdsFor?: (contenders: number) => HoldSequence;
  /** Names the run's keys (default "one-key"). */
  readonly label?: string;
}

/** Generous: far beyond any library's normal pace, only there so that a stuck run ends. */
export function timeLimitFor(sections: number, holdMs: number, roundTripMs: number): number {
  return 30_000 + sections * (holdMs + roundTripMs) * 10;
}

let runCounter = 0;
/** A key nobody used before in this backend. */
export function freshKey(label: string): string {
  runCounter += 1;
  return `run${runCounter}:${label}`;
}

export async function runContention(
  backend: BenchBackend,
  peers: readonly Peer[],
  latency: LatencyModel,
  roundTrips: Readonly<Record<Transport, number>>,
  settings: ContentionSettings,
  onSection: () => void,
): Promise<ContentionResult[]> {
  const results: ContentionResult[] = [];
  for (const contenders of settings.contenderCounts) {
    const holds = settings.holdsFor?.(contenders);
    for (const peer of peers) {
      const key = freshKey(`${settings.label ?? "one-key"}-n${contenders}`);
      const roundTripMs = roundTrips[peer.transport];
      results.push(
        await runContenders(backend, {
          peer,
          latency,
          roundTripMs,
          contenders,
          keyOf: () => key,
          sectionsPerContender: settings.sectionsPerContender,
          holdMs: settings.holdMs,
          ...holds,
          timeLimitMs: timeLimitFor(
            contenders * settings.sectionsPerContender,
            settings.holdMs,
            roundTripMs,
          ),
          onSection,
        }),
      );
    }
  }
  return results;
}

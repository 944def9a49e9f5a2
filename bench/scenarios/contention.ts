/**
 * Scenario 2, contention on one key: for each N, every peer runs N contenders × K sections of
 * hold H on one shared key, side by side under the same latency model.
 */
import type { BenchBackend } from "../backend/backend.js";
import type { LatencyModel } from "../backend/protocol.js";
import type { Peer, Transport } from "../peers/peer.js";
import { type ContentionResult, runContenders } from "./run-contenders.js";

export interface ContentionSettings {
  readonly contenderCounts: readonly number[];
  readonly sectionsPerContender: number;
  readonly holdMs: number;
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
    for (const peer of peers) {
      const key = freshKey(`one-key-n${contenders}`);
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

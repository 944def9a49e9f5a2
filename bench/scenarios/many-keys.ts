/**
 * Scenario 3, many keys: N contenders spread round-robin over M keys (contender i on key i mod M),
 * K sections each. The ideal is the busiest key's serial time: ceil(N/M) × K × (hold + R) + R.
 */
import type { BenchBackend } from "../backend/backend.js";
import type { LatencyModel } from "../backend/protocol.js";
import type { Peer, Transport } from "../peers/peer.js";
import { freshKey, timeLimitFor } from "./contention.js";
import { type ContentionResult, runContenders } from "./run-contenders.js";

export interface ManyKeysSettings {
  readonly contenders: number;
  readonly keyCounts: readonly number[];
  readonly sectionsPerContender: number;
  readonly holdMs: number;
}

export async function runManyKeys(
  backend: BenchBackend,
  peers: readonly Peer[],
  latency: LatencyModel,
  roundTrips: Readonly<Record<Transport, number>>,
  settings: ManyKeysSettings,
  onSection: () => void,
): Promise<ContentionResult[]> {
  const results: ContentionResult[] = [];
  for (const keyCount of settings.keyCounts) {
    for (const peer of peers) {
      const base = freshKey(`m${keyCount}`);
      const roundTripMs = roundTrips[peer.transport];
      const perKey = Math.ceil(settings.contenders / keyCount);
      results.push(
        await runContenders(backend, {
          peer,
          latency,
          roundTripMs,
          contenders: settings.contenders,
          keyOf: (index) => `${base}:k${index % keyCount}`,
          sectionsPerContender: settings.sectionsPerContender,
          holdMs: settings.holdMs,
          timeLimitMs: timeLimitFor(
            perKey * settings.sectionsPerContender,
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

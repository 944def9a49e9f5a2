/**
 * Scenario 4, as the primitives land: fair-lock hand-off and ordering against the plain lock, and
 * a read-heavy workload (1 write in 10 sections) on the read-write lock against exclusive locks.
 * Probes the LockClient for `fairLock` / `readWriteLock` and says when one is missing.
 */
import { LockClient } from "../../src/index.js";
import type { BenchBackend } from "../backend/backend.js";
import type { LatencyModel } from "../backend/protocol.js";
import { POLL_WAIT, PUSH_WAIT } from "../peers/edgelock.js";
import { edgelockFairPeer } from "../peers/edgelock-fair.js";
import { edgelockReadWritePeer } from "../peers/edgelock-read-write.js";
import type { HoldMode, Peer, PeerEnv, Transport } from "../peers/peer.js";
import { freshKey, timeLimitFor } from "./contention.js";
import { type ContentionResult, runContenders } from "./run-contenders.js";

export interface FairAndReadWriteSettings {
  readonly contenderCounts: readonly number[];
  readonly sectionsPerContender: number;
  readonly holdMs: number;
}

export interface FairAndReadWriteResults {
  readonly fair: ContentionResult[];
  readonly readWrite: ContentionResult[];
  readonly notes: string[];
}

/** One write in ten sections, spread so that writers differ from section to section. */
export const readHeavy = (index: number, section: number): HoldMode =>
  (index + section) % 10 === 0 ? "write" : "read";

export function availablePrimitives(): { fairLock: boolean; readWriteLock: boolean } {
  const methods = LockClient.prototype as unknown as Record<string, unknown>;
  return {
    fairLock: typeof methods.fairLock === "function",
    readWriteLock: typeof methods.readWriteLock === "function",
  };
}

/** Number of sections scenario 4 will run, for the progress bar. */
export function fairAndReadWriteSections(
  settings: FairAndReadWriteSettings,
  exclusivePeers: number,
  fairPush: boolean,
): number {
  const available = availablePrimitives();
  const perN =
    settings.contenderCounts.reduce((sum, n) => sum + n, 0) * settings.sectionsPerContender;
  return (
    (available.fairLock ? perN * (fairPush ? 4 : 3) : 0) +
    (available.readWriteLock ? perN * (1 + exclusivePeers) : 0)
  );
}

export async function runFairAndReadWrite(
  backend: BenchBackend,
  env: PeerEnv,
  exclusivePeers: readonly Peer[],
  latency: LatencyModel,
  roundTrips: Readonly<Record<Transport, number>>,
  settings: FairAndReadWriteSettings,
  /** Also run the fair lock with the push hand-off (`edgelock fair push`). */
  fairPush: boolean,
  onSection: () => void,
): Promise<FairAndReadWriteResults> {
  const available = availablePrimitives();
  const notes: string[] = [];
  const fair: ContentionResult[] = [];
  const readWrite: ContentionResult[] = [];
  const run = (peer: Peer, contenders: number, label: string, modeOf?: typeof readHeavy) => {
    const key = freshKey(label);
    const roundTripMs = roundTrips[peer.transport];
    return runContenders(backend, {
      peer,
      latency,
      roundTripMs,
      contenders,
      keyOf: () => key,
      sectionsPerContender: settings.sectionsPerContender,
      holdMs: settings.holdMs,
      ...(modeOf === undefined ? {} : { modeOf }),
      timeLimitMs: timeLimitFor(
        contenders * settings.sectionsPerContender,
        settings.holdMs,
        roundTripMs,
      ),
      onSection,
    });
  };
  const plainLock = exclusivePeers.find((peer) => peer.id === "edgelock");

  if (available.fairLock) {
    for (const n of settings.contenderCounts) {
      fair.push(await run(edgelockFairPeer(env), n, `fair-n${n}`));
      fair.push(await run(edgelockFairPeer(env, POLL_WAIT), n, `fair-poll-n${n}`));
      if (fairPush)
        fair.push(
          await run(edgelockFairPeer(env, env.pushWait ?? PUSH_WAIT), n, `fair-push-n${n}`),
        );
      if (plainLock !== undefined) fair.push(await run(plainLock, n, `fair-baseline-n${n}`));
    }
  } else {
    notes.push("fair lock: skipped — client.fairLock is not in this build yet.");
  }
  if (available.readWriteLock) {
    for (const n of settings.contenderCounts) {
      readWrite.push(await run(edgelockReadWritePeer(env), n, `rw-n${n}`, readHeavy));
      for (const peer of exclusivePeers) {
        readWrite.push(await run(peer, n, `rw-baseline-n${n}`, readHeavy));
      }
    }
  } else {
    notes.push("read-write lock: skipped — client.readWriteLock is not in this build yet.");
  }
  return { fair, readWrite, notes };
}

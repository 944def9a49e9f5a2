/**
 * Scenario 1, uncontended: one contender acquiring and releasing one key over and over. Latency of
 * acquire+release, requests and bytes per operation (the first call, EVAL, apart from the steady
 * state, EVALSHA), and the client's CPU time per operation (the backend runs in another process).
 */
import type { BenchBackend } from "../backend/backend.js";
import { wireDelta } from "../backend/backend.js";
import type { LatencyModel, WireCounts, WireSnapshot } from "../backend/protocol.js";
import { percentile } from "../metrics.js";
import type { Peer } from "../peers/peer.js";

export interface UncontendedResult {
  readonly peer: string;
  readonly label: string;
  readonly transport: string;
  readonly latency: string;
  readonly ops: number;
  /** acquire + release, client clock. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Steady state (after the first operation). */
  readonly requestsPerAcquire: number;
  readonly requestsPerRelease: number;
  /** Billed commands (every command Redis ran, a script's own included) per acquire / release. */
  readonly billedPerAcquire: number;
  readonly billedPerRelease: number;
  /** Request + response bytes of one acquire+release in the steady state. */
  readonly bytesPerOp: number;
  readonly commandsPerOp: Readonly<Record<string, number>>;
  /** The very first acquire+release of a new client (script not yet cached by the client). */
  readonly firstOp: {
    readonly requests: number;
    readonly bytes: number;
    readonly commands: Readonly<Record<string, number>>;
  };
  /** Client CPU (user + system) per acquire+release, from process.cpuUsage(). */
  readonly cpuMsPerOp: number;
}

const COUNTED_OPS = 10;

export async function runUncontended(
  backend: BenchBackend,
  peer: Peer,
  latency: LatencyModel,
  ops: number,
  key: string,
  onOp?: () => void,
): Promise<UncontendedResult> {
  const contender = await peer.contender();
  const wire = (after: WireSnapshot, before: WireSnapshot): WireCounts =>
    peer.transport === "REST"
      ? wireDelta(after.rest, before.rest)
      : wireDelta(after.tcp, before.tcp);
  try {
    // The first operation of a fresh client, alone.
    const s0 = await backend.snapshot();
    if (!(await contender.acquire(key)))
      throw new Error(`${peer.label}: uncontended acquire failed`);
    await contender.release(key);
    const first = wire(await backend.snapshot(), s0);

    // Counting pass: requests of each acquire and each release, one by one.
    let acquireRequests = 0;
    let releaseRequests = 0;
    let acquireBilled = 0;
    let releaseBilled = 0;
    let bytes = 0;
    const commands: Record<string, number> = {};
    for (let i = 0; i < COUNTED_OPS; i++) {
      const a = await backend.snapshot();
      await contender.acquire(key);
      const b = await backend.snapshot();
      await contender.release(key);
      const c = await backend.snapshot();
      const acquired = wire(b, a);
      const released = wire(c, b);
      acquireRequests += acquired.requests;
      releaseRequests += released.requests;
      acquireBilled += b.billed - a.billed;
      releaseBilled += c.billed - b.billed;
      bytes += acquired.bytesIn + acquired.bytesOut + released.bytesIn + released.bytesOut;
      for (const part of [acquired, released]) {
        for (const [name, count] of Object.entries(part.commandsByName)) {
          commands[name] = (commands[name] ?? 0) + count / COUNTED_OPS;
        }
      }
    }

    // Timing pass: nothing but the operations (no snapshots in between).
    const durations: number[] = [];
    const cpuBefore = process.cpuUsage();
    for (let i = 0; i < ops; i++) {
      const start = performance.now();
      await contender.acquire(key);
      await contender.release(key);
      durations.push(performance.now() - start);
      onOp?.();
    }
    const cpu = process.cpuUsage(cpuBefore);

    return {
      peer: peer.id,
      label: peer.label,
      transport: peer.transport,
      latency: latency.name,
      ops,
      p50Ms: percentile(durations, 0.5),
      p99Ms: percentile(durations, 0.99),
      requestsPerAcquire: acquireRequests / COUNTED_OPS,
      requestsPerRelease: releaseRequests / COUNTED_OPS,
      billedPerAcquire: acquireBilled / COUNTED_OPS,
      billedPerRelease: releaseBilled / COUNTED_OPS,
      bytesPerOp: bytes / COUNTED_OPS,
      commandsPerOp: commands,
      firstOp: {
        requests: first.requests,
        bytes: first.bytesIn + first.bytesOut,
        commands: first.commandsByName,
      },
      cpuMsPerOp: (cpu.user + cpu.system) / 1000 / ops,
    };
  } finally {
    await contender.close();
  }
}

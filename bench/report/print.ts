/** The terminal tables of each scenario. */
import type { ContentionResult } from "../scenarios/run-contenders.js";
import type { UncontendedResult } from "../scenarios/uncontended.js";
import type { ColdBurstResult, WorkerResult } from "../scenarios/worker.js";
import { fixed, formatTable } from "./table.js";

function commands(counts: Readonly<Record<string, number>>): string {
  return Object.entries(counts)
    .map(([name, count]) => (count === 1 ? name : `${fixed(count, 1)}×${name}`))
    .join("+");
}

export function printUncontended(results: readonly UncontendedResult[]): string {
  return formatTable(
    [
      "latency",
      "library",
      "via",
      "p50 ms",
      "p99 ms",
      "req/acq",
      "req/rel",
      "billed acq/rel",
      "cycles/s per db",
      "bytes/op",
      "commands/op",
      "first op",
      "CPU µs/op",
    ],
    results.map((r) => [
      r.latency,
      r.label,
      r.transport,
      fixed(r.p50Ms, 2),
      fixed(r.p99Ms, 2),
      fixed(r.requestsPerAcquire, 2),
      fixed(r.requestsPerRelease, 2),
      `${fixed(r.billedPerAcquire, 1)} / ${fixed(r.billedPerRelease, 1)}`,
      // Upstash serves at most 10 000 commands per second per database (docs/upstash.md).
      fixed(10_000 / (r.billedPerAcquire + r.billedPerRelease), 0),
      fixed(r.bytesPerOp, 0),
      commands(r.commandsPerOp),
      `${r.firstOp.requests} req ${r.firstOp.bytes} B`,
      fixed(r.cpuMsPerOp * 1000, 0),
    ]),
  );
}

export function printContention(results: readonly ContentionResult[], showKeys: boolean): string {
  return formatTable(
    [
      "latency",
      ...(showKeys ? ["M"] : []),
      "N",
      "library",
      "acq/s",
      "R ms",
      "eff %",
      "req/acq",
      "billed/acq",
      "commands/acq",
      "hand-off p50/p99 ms",
      "wait p50/p99 ms",
      "worst wait ms",
      "Jain",
      "max/mean",
      "FIFO %",
      "fail",
      "overlap",
    ],
    results.map((r) => [
      r.latency,
      ...(showKeys ? [r.keys] : []),
      r.contenders,
      r.label + (r.reads > 0 ? " (rw)" : "") + (r.incomplete ? " (incomplete)" : ""),
      fixed(r.throughputPerSec, 1),
      fixed(r.roundTripMs, 1),
      fixed(r.efficiency * 100, 0),
      fixed(r.requestsPerAcquisition, 2),
      fixed(r.billedPerAcquisition, 1),
      commands(r.commandsPerAcquisition),
      `${fixed(r.handoffP50Ms, 1)} / ${fixed(r.handoffP99Ms, 1)}`,
      `${fixed(r.waitP50Ms, 0)} / ${fixed(r.waitP99Ms, 0)}`,
      fixed(r.worstWaitMs, 0),
      fixed(r.jainIndex, 2),
      fixed(r.maxOverMeanWait, 1),
      fixed(r.fifoShare * 100, 0),
      r.failures,
      r.overlaps,
    ]),
  );
}

export function printWorker(results: readonly WorkerResult[]): string {
  return formatTable(
    [
      "latency",
      "library",
      "inc/s",
      "R ms",
      "eff %",
      "lock cmd/inc",
      "billed lock cmd/inc",
      "pushed/inc",
      "HTTP req/inc",
      "max lock cmd/invocation",
      "over 50",
      "latency p50/p99 ms",
      "409 re-sent",
      "errors",
      "counter",
    ],
    results.map((r) => [
      r.latency,
      r.label,
      fixed(r.incrementsPerSec, 1),
      fixed(r.roundTripMs, 1),
      fixed(r.efficiency * 100, 0),
      fixed(r.lockCommandsPerIncrement, 2),
      fixed(r.billedLockCommandsPerIncrement, 1),
      fixed(r.pushedPerIncrement, 1),
      fixed(r.httpRequestsPerIncrement, 2),
      r.maxLockCommandsPerInvocation,
      r.invocationsOverSubrequestLimit,
      `${fixed(r.latencyP50Ms, 0)} / ${fixed(r.latencyP99Ms, 0)}`,
      r.resends,
      r.errors,
      `${r.counter} / ${r.increments}${r.exact ? " exact" : " WRONG"}`,
    ]),
  );
}

export function printColdBurst(results: readonly ColdBurstResult[]): string {
  return formatTable(
    [
      "latency",
      "library",
      "isolate",
      "served",
      "bound",
      "409",
      "errors",
      "billed",
      "full EVALs",
      "commands",
      "first / last 200 ms",
      "409 at p50 ms",
      "invoked p50 / max ms",
      "1st section ms",
      "cycle ms",
      "served by tenth",
    ],
    results.map((r) => [
      r.latency,
      r.label,
      r.isolate,
      r.served,
      r.servedBound,
      r.busy,
      r.errors,
      r.billedCommands,
      r.fullEvals,
      commands(r.commandsByName),
      `${fixed(r.firstServedMs, 0)} / ${fixed(r.lastServedMs, 0)}`,
      fixed(r.busyAtP50Ms, 0),
      `${fixed(r.invocationStartP50Ms, 0)} / ${fixed(r.invocationStartMaxMs, 0)}`,
      fixed(r.firstSectionMs, 0),
      fixed(r.sectionCycleMs, 1),
      r.servedByArrivalDecile.join(" "),
    ]),
  );
}

/** The figures of a chaos run: a table for people, a JSON file for the record. */
import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { ChaosResult } from "./workload.js";

const percent = (fraction: number) => `${(fraction * 100).toFixed(1)} %`;

/** Rows of [figure, value], in reading order. */
export function figureRows(result: ChaosResult): [string, string][] {
  const { operations, requests, resource, holds, deadHolders, config } = result;
  const kinds = Object.entries(operations.byKind)
    .map(([kind, count]) => `${kind} ${count}`)
    .join(", ");
  return [
    ["primitive / backend", `${result.primitive} / ${result.backend}`],
    ["seed", String(config.seed)],
    [
      "isolates × holders, keys",
      `${config.isolates} × ${config.holdersPerIsolate}, ${config.keys} keys`,
    ],
    ["elapsed", `${(result.elapsedMs / 1000).toFixed(1)} s`],
    ["  harness timers fired up to", `${result.timerLatenessMs} ms late`],
    ["lock operations", `${operations.total} (${operations.perSecond}/s)`],
    ["  by kind", kinds],
    ["critical sections", String(result.sections)],
    ["HTTP requests", String(requests.total)],
    ["  refused before running (503)", String(requests.failedBeforeExecute)],
    ["  answer lost after running", String(requests.droppedAfterExecute)],
    [
      "  delayed past the lease (spikes)",
      `${requests.delayedBySpike} in ${requests.spikes} spikes`,
    ],
    [
      "  hung until the client gave up",
      `${requests.hungBeforeExecute} before running, ${requests.hungAfterExecute} after`,
    ],
    ["  faulted", percent(requests.faultedFraction)],
    ["server state readings (sampler + grant probes)", String(result.samples)],
    ["writes accepted by the fence", String(resource.acceptedWrites)],
    ["stale writes refused by the fence", String(resource.refusedStaleWrites)],
    ["racy counter: lost updates", String(resource.lostUpdates)],
    ["holds lost during their section", String(holds.lostDuringSection)],
    [
      "events",
      Object.entries(holds.events)
        .map(([type, count]) => `${type} ${count}`)
        .join(", ") || "none",
    ],
    [
      "dead holders",
      `${deadHolders.total} (${Object.entries(deadHolders.byCause)
        .map(([cause, count]) => `${cause} ${count}`)
        .join(", ")})`,
    ],
    [
      "longest a dead holder kept a lock",
      `${deadHolders.longestSeenHeldMs}–${deadHolders.longestHeldMs} ms (last seen held – first seen free)`,
    ],
    ["  latest sighting vs its bound", `${deadHolders.latestSightingPastBoundMs} ms`],
    ...patternRows(result),
    ...(result.readersAroundWriter === undefined
      ? []
      : ([
          [
            "read holds around a parked writer (rounds / a writer waited)",
            `${result.readersAroundWriter.rounds} / ${result.readersAroundWriter.aroundAWriter}`,
          ],
        ] as [string, string][])),
    ...(result.capacityChanges === undefined
      ? []
      : ([
          [
            "capacity changes (shrinks / grows / back to base / failed requests)",
            `${result.capacityChanges.changes}: ${result.capacityChanges.shrinks} / ${result.capacityChanges.grows} / ${result.capacityChanges.backToBase} / ${result.capacityChanges.failed}`,
          ],
          [
            "  shrinks under a waiter asking more / SemaphoreCapacityError waits",
            `${result.capacityChanges.shrinksUnderWaiters} / ${result.capacityChanges.capacityErrors}`,
          ],
        ] as [string, string][])),
    ...(result.liveness === undefined
      ? []
      : ([
          [
            "waits (acquire calls that waited)",
            `${result.liveness.waits}: ${result.liveness.idleStretches} idle stretches seen (a key free for a live waiter), the longest ${result.liveness.longestIdleMs} ms, ${result.liveness.pastBaseExcused} past the base bound of ${result.liveness.baseMs} ms`,
          ],
          [
            "  excuses (what may keep a key idle)",
            Object.entries(result.liveness.excuses)
              .map(([what, count]) => `${what} ${count}`)
              .join(", ") || "none",
          ],
        ] as [string, string][])),
    ...Object.entries(result.primitiveFigures ?? {}).map(([name, value]): [string, string] => [
      name,
      String(value),
    ]),
  ];
}

/** The round-3 patterns: scope siblings, aborts, force releases, late copies, killed waiters. */
function patternRows(result: ChaosResult): [string, string][] {
  const p = result.patterns;
  return [
    [
      "scope siblings (groups / tasks)",
      `${p.siblingGroups} / ${p.siblingTasks}: ${p.siblingsHoldingTogether} held beside a sibling's hold, ` +
        `${p.siblingWaitsBesideAHold} asked while a sibling held`,
    ],
    ["waits given an AbortSignal / aborted", `${p.abortArmed} / ${p.aborted}`],
    ["force releases (sent / freed a hold)", `${p.forceReleases} / ${p.forceReleasesThatFreed}`],
    [
      "late copies (drawn / delivered)",
      `${p.lateCopies.scheduled} / ${p.lateCopies.delivered} (${p.lateCopies.afterSenderGaveUp} after the sender was done with the original, ${p.lateCopies.parks} of parks)`,
    ],
    ["waiters killed while parked", String(p.killedParked)],
  ];
}

/** The run as text: figures, then one line per invariant. */
export function formatReport(result: ChaosResult): string {
  const rows = figureRows(result);
  const width = Math.max(...rows.map(([name]) => name.length)) + 2;
  const lines = rows.map(([name, value]) => `${name.padEnd(width)}${value}`);
  lines.push("", "invariants (checked / violations):");
  for (const invariant of result.invariants) {
    const mark = invariant.violations === 0 ? "ok  " : "FAIL";
    lines.push(
      `  ${mark} ${invariant.name.padEnd(56)} ${String(invariant.checked).padStart(8)} / ${invariant.violations}`,
    );
    for (const example of invariant.examples) lines.push(`         ${example}`);
  }
  lines.push("", `violations: ${result.violations}`);
  return lines.join("\n");
}

/** Writes the result as JSON (creating the folder). */
export async function writeReport(path: string, result: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(result, null, 2)}\n`);
}

/** `bench/results/chaos-2026-09-15T10-20-30.json`. */
export function defaultReportPath(startedAt: string): string {
  return `bench/results/chaos-${startedAt.slice(0, 19).replaceAll(":", "-")}.json`;
}

/** One kind's line in the per-kind table. */
export interface KindRow {
  readonly kind: string;
  readonly operations: number;
  readonly requests: number;
  readonly faultedFraction: number;
  readonly violations: number;
  readonly elapsedMs: number;
}

export function kindRowOf(result: ChaosResult): KindRow {
  return {
    kind: result.primitive,
    operations: result.operations.total,
    requests: result.requests.total,
    faultedFraction: result.requests.faultedFraction,
    violations: result.violations,
    elapsedMs: result.elapsedMs,
  };
}

/** One row per kind and a total: the table of docs/reliability.md. */
export function formatKindTable(rows: readonly KindRow[]): string {
  const total = rows.reduce(
    (sum, row) => ({
      operations: sum.operations + row.operations,
      requests: sum.requests + row.requests,
      faulted: sum.faulted + row.faultedFraction * row.requests,
      violations: sum.violations + row.violations,
      elapsedMs: sum.elapsedMs + row.elapsedMs,
    }),
    { operations: 0, requests: 0, faulted: 0, violations: 0, elapsedMs: 0 },
  );
  const lines = [
    ["kind", "operations", "requests", "faulted", "violations", "wall"],
    ...rows.map((row) => [
      row.kind,
      String(row.operations),
      String(row.requests),
      percent(row.faultedFraction),
      String(row.violations),
      `${(row.elapsedMs / 1000).toFixed(0)} s`,
    ]),
    [
      "total",
      String(total.operations),
      String(total.requests),
      percent(total.requests === 0 ? 0 : total.faulted / total.requests),
      String(total.violations),
      `${(total.elapsedMs / 1000).toFixed(0)} s`,
    ],
  ];
  return lines.map((line) => `| ${line.join(" | ")} |`).join("\n");
}

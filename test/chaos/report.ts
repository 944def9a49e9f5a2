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
export async function writeReport(
  path: string,
  result: ChaosResult | readonly ChaosResult[],
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(result, null, 2)}\n`);
}

/** `bench/results/chaos-2026-09-15T10-20-30.json`. */
export function defaultReportPath(startedAt: string): string {
  return `bench/results/chaos-${startedAt.slice(0, 19).replaceAll(":", "-")}.json`;
}

/** One row per kind: the table of docs/reliability.md. */
export function formatKindTable(results: readonly ChaosResult[]): string {
  const rows = [
    ["kind", "operations", "sections", "requests", "faulted", "hung", "violations", "wall"],
    ...results.map((result) => [
      result.primitive,
      String(result.operations.total),
      String(result.sections),
      String(result.requests.total),
      percent(result.requests.faultedFraction),
      String(result.requests.hungBeforeExecute + result.requests.hungAfterExecute),
      String(result.violations),
      `${(result.elapsedMs / 1000).toFixed(0)} s`,
    ]),
  ];
  return rows.map((row) => `| ${row.join(" | ")} |`).join("\n");
}

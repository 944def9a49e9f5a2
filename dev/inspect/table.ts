/** The terminal view of an inspector snapshot (`edgelock inspect --table`). */
import type { InspectedLock, InspectorSnapshot } from "../../src/inspector/types.js";

function seconds(ms: number | null): string {
  return ms === null ? "—" : `${(ms / 1000).toFixed(1)} s`;
}

function columns(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd(),
  );
}

function lockRow(lock: InspectedLock): string[] {
  return [
    lock.name,
    lock.kind,
    lock.state,
    lock.holders.map((holder) => `${holder.owner}×${holder.holds}`).join(",") || "—",
    seconds(lock.leaseLeftMs),
    lock.fencingToken === null ? "—" : String(lock.fencingToken),
    String(lock.readHoldCount),
    String(lock.waiterCount),
  ];
}

export function formatTable(snapshot: InspectorSnapshot): string {
  const lines = columns([
    ["NAME", "KIND", "STATE", "HOLDERS", "LEASE LEFT", "FENCE", "READS", "WAITERS"],
    ...snapshot.locks.map(lockRow),
  ]);
  for (const lock of snapshot.locks) {
    if (lock.waiters.length === 0) continue;
    lines.push("", `queue of ${lock.name}:`);
    lines.push(
      ...columns([
        ["POS", "OWNER", "WAITING", "MODE"],
        ...lock.waiters.map((waiter) => [
          String(waiter.position),
          waiter.owner,
          seconds(snapshot.takenAt - waiter.waitingSince),
          waiter.mode,
        ]),
      ]).map((line) => `  ${line}`),
    );
  }
  if (snapshot.locks.length === 0) lines.push("(no lock is held or waited for)");
  const scan = snapshot.scan.refused
    ? `not scanned: ${snapshot.scan.refused}`
    : `scanned ${snapshot.scan.keysSeen} keys${snapshot.scan.complete ? "" : ` (incomplete: --cursor ${snapshot.scan.cursor} goes on)`}`;
  lines.push(
    "",
    `${scan}; ${snapshot.idleCount} idle lock(s); ${snapshot.notShown} not read (--max-locks)`,
    `this refresh cost ${snapshot.cost.total} command(s): ${snapshot.cost.scan} SCAN, ${readCost(snapshot)}`,
  );
  return lines.join("\n");
}

/**
 * The reads' share of the cost, in commands: one read-only script per lock, semaphore or latch,
 * two where the server lacked the script (EVALSHA refused, then EVAL). Not a count of locks.
 */
export function readCost(snapshot: InspectorSnapshot): string {
  return `${snapshot.cost.read} to read the locks, semaphores and latches (one script each; two where the server lacked it)`;
}

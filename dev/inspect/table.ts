/** The terminal views of an inspector snapshot (`edgelock inspect --table`) and of recent waits. */
import type {
  InspectedLock,
  InspectedWaits,
  InspectorSnapshot,
  RecentWait,
} from "../../src/inspector/types.js";

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

/** The sleeps of a wait summed by their reason: "turn 600 ms, backoff 40 ms". */
function sleptByWhy(wait: RecentWait): string {
  const byWhy = new Map<string, number>();
  for (const step of wait.steps) {
    if (step.delayMs > 0)
      byWhy.set(step.why ?? "—", (byWhy.get(step.why ?? "—") ?? 0) + step.delayMs);
  }
  const slept = [...byWhy].map(([why, ms]) => `${why} ${ms} ms`).join(", ") || "—";
  return wait.droppedSteps > 0 ? `${slept} (steps kept)` : slept;
}

function outcomeOf(wait: RecentWait): string {
  if (wait.outcome === "notAcquired") return `not acquired: ${wait.reason ?? "?"}`;
  return wait.handOff ? "acquired (hand-off)" : "acquired";
}

/** The terminal view of `GET api/waits` (`edgelock inspect waits`), newest first. */
export function formatWaits(
  answer: Extract<InspectedWaits, { recording: true }>,
  withSteps: boolean,
): string {
  if (answer.waits.length === 0) return "(no wait has ended since recording began)";
  const lines = columns([
    ["ENDED", "NAME", "OUTCOME", "WAITED", "REQUESTS", "STEPS", "SLEPT (WHY)"],
    ...answer.waits.map((wait) => [
      `${seconds(Math.max(0, answer.takenAt - wait.endedAt))} ago`,
      wait.name,
      outcomeOf(wait),
      `${wait.waitedMs} ms`,
      String(wait.requests),
      String(wait.steps.length + wait.droppedSteps),
      sleptByWhy(wait),
    ]),
  ]);
  if (!withSteps) return lines.join("\n");
  for (const wait of answer.waits) {
    lines.push("", `steps of ${wait.name} (wait ${wait.id}):`);
    const rows: string[][] = [["ATTEMPT", "ANSWER", "ROUND TRIP", "HOLDER TTL", "SLEEPS", "WHY"]];
    wait.steps.forEach((step, i) => {
      const gap = step.attempt - (wait.steps[i - 1]?.attempt ?? step.attempt - 1) - 1;
      if (gap > 0) rows.push(["…", `${gap} step(s) left out`]);
      rows.push([
        String(step.attempt),
        step.answer,
        `${step.durationMs} ms`,
        step.holderTtlMs === null ? "—" : `${step.holderTtlMs} ms`,
        `${step.delayMs} ms`,
        step.why ?? "—",
      ]);
    });
    lines.push(...columns(rows).map((line) => `  ${line}`));
  }
  return lines.join("\n");
}

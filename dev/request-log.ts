/**
 * What `edgelock dev` prints about the traffic it served: one line per request's commands and per
 * error response under `--verbose`, and a summary on exit.
 */
import type { ScriptLock } from "./profile/backend.js";
import { ServerStats, type StatsSnapshot } from "./rest/stats.js";

function clock(): string {
  return new Date().toISOString().slice(11, 23);
}

/** ServerStats that also logs each batch of commands and each error status as it is counted. */
export class LoggingStats extends ServerStats {
  constructor(private readonly log: (line: string) => void) {
    super();
  }

  override recordCommands(names: readonly string[], scriptCommands = 0): void {
    super.recordCommands(names, scriptCommands);
    const billed =
      scriptCommands === 0
        ? ""
        : `; billed ${names.length + scriptCommands} (${scriptCommands} run by scripts)`;
    this.log(
      `${clock()} ${names.length === 1 ? "" : `${names.length} commands: `}${names.join(" ")}${billed}`,
    );
  }

  override recordScript(lock: ScriptLock, sha: string, command: string): void {
    super.recordScript(lock, sha, command);
    if (lock === "global") {
      this.log(`${clock()} ${command} ${sha.slice(0, 12)}… runs under Upstash's global lock`);
    }
  }

  override recordDynamicKeyRejection(sha: string, message: string): void {
    super.recordDynamicKeyRejection(sha, message);
    this.log(`${clock()} script ${sha.slice(0, 12)}… rejected: ${message}`);
  }

  override recordResponse(status: number, bodyBytes: number): void {
    super.recordResponse(status, bodyBytes);
    if (status >= 400) this.log(`${clock()} answered HTTP ${status}`);
  }
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * One line: requests, commands (the most frequent by name), billed commands (scripts' own
 * included), bytes in and out, error statuses, and the scripts by the lock Upstash would take.
 */
export function summarizeStats(stats: StatsSnapshot): string {
  const top = Object.entries(stats.commandsByName)
    .sort(([, a], [, b]) => b - a)
    .slice(0, 5)
    .map(([name, count]) => `${name} ${count}`);
  const errors = Object.entries(stats.responsesByStatus)
    .filter(([status]) => Number(status) >= 400)
    .map(([status, count]) => `HTTP ${status} ×${count}`);
  return (
    `served ${stats.requests} requests, ${stats.commands} commands` +
    (top.length > 0 ? ` (${top.join(", ")})` : "") +
    `, ${stats.billedCommands} billed` +
    (stats.scriptCommands > 0 ? ` (${stats.scriptCommands} run by scripts)` : "") +
    `, ${formatBytes(stats.bytesIn)} in, ${formatBytes(stats.bytesOut)} out` +
    (errors.length > 0 ? `; ${errors.join(", ")}` : "") +
    summarizeScripts(stats)
  );
}

function summarizeScripts({ scripts, blocking }: StatsSnapshot): string {
  const parts: string[] = [];
  if (scripts.globalLock + scripts.keyLocking > 0) {
    parts.push(
      `scripts: ${scripts.globalLock} under Upstash's global lock, ${scripts.keyLocking} with allow-key-locking`,
    );
  }
  if (scripts.dynamicKeyRejections > 0) {
    parts.push(`${scripts.dynamicKeyRejections} dynamic-key rejections`);
  }
  if (blocking.answeredAtOnce > 0)
    parts.push(`${blocking.answeredAtOnce} blocking commands answered at once`);
  if (blocking.refused > 0) parts.push(`${blocking.refused} blocking commands refused`);
  return parts.length > 0 ? `; ${parts.join(", ")}` : "";
}

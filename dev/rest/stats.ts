/** Counters of what the server did, for tests (e.g. "this lock call made exactly 2 requests"). */
import type { RouteKind } from "./routes.js";

export interface StatsSnapshot {
  /** HTTP requests received, all routes. */
  readonly requests: number;
  readonly requestsByRoute: Readonly<Record<RouteKind, number>>;
  /** Responses sent, by HTTP status (dropped responses are not counted). */
  readonly responsesByStatus: Readonly<Record<number, number>>;
  /** Commands handed to the backend (a pipeline of 3 counts 3). */
  readonly commands: number;
  /** Commands handed to the backend, by lower-case name, e.g. `{ evalsha: 2, eval: 1 }`. */
  readonly commandsByName: Readonly<Record<string, number>>;
  /** Request body bytes received. */
  readonly bytesIn: number;
  /** Response body bytes sent. */
  readonly bytesOut: number;
}

function emptyByRoute(): Record<RouteKind, number> {
  return { command: 0, pipeline: 0, "multi-exec": 0, path: 0, unknown: 0 };
}

export class ServerStats {
  private requestCount = 0;
  private byRoute = emptyByRoute();
  private byStatus = new Map<number, number>();
  private commandCount = 0;
  private byName = new Map<string, number>();
  private bytesInCount = 0;
  private bytesOutCount = 0;

  /** A copy of the counters, safe to keep while the server goes on counting. */
  snapshot(): StatsSnapshot {
    return {
      requests: this.requestCount,
      requestsByRoute: { ...this.byRoute },
      responsesByStatus: Object.fromEntries(this.byStatus),
      commands: this.commandCount,
      commandsByName: Object.fromEntries(this.byName),
      bytesIn: this.bytesInCount,
      bytesOut: this.bytesOutCount,
    };
  }

  /** Sets every counter back to zero. */
  reset(): void {
    this.requestCount = 0;
    this.byRoute = emptyByRoute();
    this.byStatus = new Map();
    this.commandCount = 0;
    this.byName = new Map();
    this.bytesInCount = 0;
    this.bytesOutCount = 0;
  }

  /** @internal Called by the server. */
  recordRequest(route: RouteKind, bodyBytes: number): void {
    this.requestCount += 1;
    this.byRoute[route] += 1;
    this.bytesInCount += bodyBytes;
  }

  /** @internal Called by the server. */
  recordCommands(names: readonly string[]): void {
    this.commandCount += names.length;
    for (const name of names) this.byName.set(name, (this.byName.get(name) ?? 0) + 1);
  }

  /** @internal Called by the server. */
  recordResponse(status: number, bodyBytes: number): void {
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
    this.bytesOutCount += bodyBytes;
  }
}

/** Counters of what the server did, for tests (e.g. "this lock call made exactly 2 requests"). */
import type { ScriptLock } from "../profile/backend.js";
import type { RouteKind } from "./routes.js";

/** Scripts by the lock production Upstash would run them under (docs/upstash.md). */
export interface ScriptStats {
  /**
   * Script runs (EVAL, EVALSHA, their _RO forms, FCALL) under Upstash's database-wide lock: no
   * `allow-key-locking` flag, or queued in /multi-exec. Counted under both profiles.
   */
  readonly globalLock: number;
  /** Script runs with `allow-key-locking` (only the `upstash` profile honours the flag). */
  readonly keyLocking: number;
  /** `allow-key-locking` scripts that touched a key not in their KEYS and got Upstash's error. */
  readonly dynamicKeyRejections: number;
  /** Global-lock runs by the client's script SHA (`function:<name>` for FCALL). */
  readonly globalLockBySha: Readonly<Record<string, number>>;
}

/** Blocking commands (BLPOP…) the `upstash` profile did not let block. */
export interface BlockingStats {
  /** Answered as if their timeout had passed at once (`blocking: "immediate"`). */
  readonly answeredAtOnce: number;
  /** Refused with Upstash's error (`blocking: "error"`). */
  readonly refused: number;
}

/** The counters of `ServerStats.snapshot()` (also JSON at `GET <url>/_edgelock/stats`). */
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
  /**
   * Commands scripts ran: every redis.call/pcall that reached a command (on redis-server read
   * off INFO stats around each script run, see dev/resp/script-metering.ts).
   */
  readonly scriptCommands: number;
  /**
   * What Upstash bills: `commands` plus `scriptCommands` (an EVALSHA whose script ran 3
   * redis.calls is 4; a pipeline of 3 plain commands is 3). docs/upstash.md has the price.
   */
  readonly billedCommands: number;
  /** Request body bytes received. */
  readonly bytesIn: number;
  /** Response body bytes sent. */
  readonly bytesOut: number;
  readonly scripts: ScriptStats;
  readonly blocking: BlockingStats;
  /**
   * Pub/sub over server-sent events: streams opened, and messages pushed on them (not requests);
   * streams open now, and the most open at once since the last `reset()` (or since start).
   */
  readonly streams: {
    readonly subscriptions: number;
    readonly pushedMessages: number;
    readonly open: number;
    readonly peakOpen: number;
  };
}

function emptyByRoute(): Record<RouteKind, number> {
  return { command: 0, pipeline: 0, "multi-exec": 0, path: 0, monitor: 0, stats: 0, unknown: 0 };
}

/**
 * The local server's request and command counters (`DevServer.stats`): `snapshot()` and
 * `reset()`. A subclass given as `stats` observes each request.
 */
export class ServerStats {
  private requestCount = 0;
  private byRoute = emptyByRoute();
  private byStatus = new Map<number, number>();
  private commandCount = 0;
  private byName = new Map<string, number>();
  private scriptCommandCount = 0;
  private bytesInCount = 0;
  private bytesOutCount = 0;
  private globalLockScripts = 0;
  private keyLockingScripts = 0;
  private dynamicKeyRejectionCount = 0;
  private globalLockBySha = new Map<string, number>();
  private blockingAtOnce = 0;
  private blockingRefused = 0;
  private subscriptionCount = 0;
  private pushedMessageCount = 0;
  private openStreams = 0;
  private peakOpenStreams = 0;

  /** A copy of the counters, safe to keep while the server goes on counting. */
  snapshot(): StatsSnapshot {
    return {
      requests: this.requestCount,
      requestsByRoute: { ...this.byRoute },
      responsesByStatus: Object.fromEntries(this.byStatus),
      commands: this.commandCount,
      commandsByName: Object.fromEntries(this.byName),
      scriptCommands: this.scriptCommandCount,
      billedCommands: this.commandCount + this.scriptCommandCount,
      streams: {
        subscriptions: this.subscriptionCount,
        pushedMessages: this.pushedMessageCount,
        open: this.openStreams,
        peakOpen: this.peakOpenStreams,
      },
      bytesIn: this.bytesInCount,
      bytesOut: this.bytesOutCount,
      scripts: {
        globalLock: this.globalLockScripts,
        keyLocking: this.keyLockingScripts,
        dynamicKeyRejections: this.dynamicKeyRejectionCount,
        globalLockBySha: Object.fromEntries(this.globalLockBySha),
      },
      blocking: { answeredAtOnce: this.blockingAtOnce, refused: this.blockingRefused },
    };
  }

  /** Sets every counter back to zero. */
  reset(): void {
    this.requestCount = 0;
    this.byRoute = emptyByRoute();
    this.byStatus = new Map();
    this.commandCount = 0;
    this.byName = new Map();
    this.scriptCommandCount = 0;
    this.bytesInCount = 0;
    this.bytesOutCount = 0;
    this.globalLockScripts = 0;
    this.keyLockingScripts = 0;
    this.dynamicKeyRejectionCount = 0;
    this.globalLockBySha = new Map();
    this.blockingAtOnce = 0;
    this.blockingRefused = 0;
    this.subscriptionCount = 0;
    this.pushedMessageCount = 0;
    // A gauge: the streams open now stay open.
    this.peakOpenStreams = this.openStreams;
  }

  /** @internal Called by the server: a subscription stream opened. */
  recordSubscription(): void {
    this.subscriptionCount += 1;
    this.openStreams += 1;
    this.peakOpenStreams = Math.max(this.peakOpenStreams, this.openStreams);
  }

  /** @internal Called by the server: a subscription stream ended (either side closed it). */
  recordSubscriptionEnd(): void {
    this.openStreams = Math.max(0, this.openStreams - 1);
  }

  /** @internal Called by the server: one message pushed on a stream. */
  recordPushedMessage(): void {
    this.pushedMessageCount += 1;
  }

  /** @internal Called by the server. */
  recordRequest(route: RouteKind, bodyBytes: number): void {
    this.requestCount += 1;
    this.byRoute[route] += 1;
    this.bytesInCount += bodyBytes;
  }

  /**
   * @internal Called by the server once per request: the commands it ran, and the commands its
   * scripts ran.
   */
  recordCommands(names: readonly string[], scriptCommands = 0): void {
    this.commandCount += names.length;
    this.scriptCommandCount += scriptCommands;
    for (const name of names) this.byName.set(name, (this.byName.get(name) ?? 0) + 1);
  }

  /** @internal Called by the server. */
  recordResponse(status: number, bodyBytes: number): void {
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
    this.bytesOutCount += bodyBytes;
  }

  /** @internal Called by the server's profile. `command` is the lower-case name (evalsha…). */
  recordScript(lock: ScriptLock, sha: string, _command: string): void {
    if (lock === "key") {
      this.keyLockingScripts += 1;
      return;
    }
    this.globalLockScripts += 1;
    this.globalLockBySha.set(sha, (this.globalLockBySha.get(sha) ?? 0) + 1);
  }

  /** @internal Called by the server's profile. */
  recordDynamicKeyRejection(_sha: string, _message: string): void {
    this.dynamicKeyRejectionCount += 1;
  }

  /** @internal Called by the server's profile. */
  recordBlocking(outcome: "immediate" | "refused", _command: string): void {
    if (outcome === "immediate") this.blockingAtOnce += 1;
    else this.blockingRefused += 1;
  }
}

/** Messages between the bench (parent) and its backend process (child), over Node's IPC channel. */

/** Round trip injected by the backend: `latencyMs ± jitterMs` (uniform), per request. */
export interface LatencyModel {
  /** Short name for tables, e.g. "20±5 ms". */
  readonly name: string;
  readonly latencyMs: number;
  readonly jitterMs: number;
}

/** What one transport of the backend received and sent since it started. */
export interface WireCounts {
  /** HTTP requests (REST) or Redis commands (TCP). */
  readonly requests: number;
  /** Request bytes received (REST: bodies only, headers excluded; TCP: everything). */
  readonly bytesIn: number;
  /** Response bytes sent (same rule). */
  readonly bytesOut: number;
  /** Commands by lower-case name, e.g. `{ evalsha: 10, eval: 1 }`. */
  readonly commandsByName: Readonly<Record<string, number>>;
}

export interface WireSnapshot {
  readonly rest: WireCounts;
  readonly tcp: WireCounts;
  /**
   * Billed commands so far, over both transports: every command Redis ran, each command a
   * script ran included (what Upstash bills), read off INFO commandstats.
   */
  readonly billed: number;
}

export interface ReadyMessage {
  readonly type: "ready";
  readonly restUrl: string;
  readonly token: string;
  /** Port of the TCP latency proxy in front of redis-server (for ioredis peers). */
  readonly tcpPort: number;
  /** Port of redis-server itself (no injected latency). */
  readonly redisPort: number;
  readonly description: string;
}

export type RequestBody =
  | { readonly op: "snapshot" }
  | { readonly op: "latency"; readonly model: LatencyModel }
  | { readonly op: "close" };

export type Request = RequestBody & { readonly id: number };

export interface Reply {
  readonly id: number;
  readonly snapshot?: WireSnapshot;
  readonly error?: string;
}

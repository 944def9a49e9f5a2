import type { WaitOptions } from "../../src/wait/policy.js";
/**
 * The common shape of every library under test. A peer makes contenders; a contender is one
 * "isolate": its own client (HTTP client or TCP connection), acquiring and releasing locks one at
 * a time, each waiting as long as its library lets it.
 */

/** REST: HTTP through the local Upstash-compatible server. TCP: ioredis straight to Redis. */
export type Transport = "REST" | "TCP";

/** Shared (read) or exclusive (write) hold; exclusive-only locks treat both as exclusive. */
export type HoldMode = "read" | "write";

export interface Contender {
  /** Acquires `key`, waiting as its library does; false when the library gave up. */
  acquire(key: string, mode?: HoldMode): Promise<boolean>;
  /** Releases `key`, which this contender holds. */
  release(key: string): Promise<void>;
  /** Closes this contender's connection, if it has one. */
  close(): Promise<void>;
}

export interface Peer {
  /** Stable id used on the command line and in the JSON, e.g. "upstash-lock". */
  readonly id: string;
  /** Name in tables and charts. */
  readonly label: string;
  readonly transport: Transport;
  /** How the library is configured here, stated in the output. */
  readonly config: string;
  /** True when read holds are shared (a read-write lock); else every hold is exclusive. */
  readonly sharedReads?: boolean;
  contender(): Promise<Contender>;
}

/** Where the peers connect. */
export interface PeerEnv {
  readonly restUrl: string;
  readonly token: string;
  /** TCP latency proxy in front of the same redis-server. */
  readonly tcpPort: number;
  /** Lease of every lock, in ms, the same for every library. */
  readonly leaseMs: number;
  /** The `edgelock push` peers' wait: over a subscription on the `upstash` profile, else a pop. */
  readonly pushWait?: WaitOptions;
}

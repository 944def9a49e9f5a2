/**
 * The Durable Object shapes the watchdog uses, structural so that this folder compiles under the
 * library's DOM + Node types as well as under `@cloudflare/workers-types`.
 */

/** One value SQLite stores for us (we never store blobs). */
export type SqlValue = string | number | null;

/** `ctx.storage.sql` of a SQLite-backed Durable Object. */
export interface SqlLike {
  exec(
    query: string,
    ...bindings: SqlValue[]
  ): {
    toArray(): Record<string, unknown>[];
    readonly rowsWritten: number;
  };
}

/** `ctx.storage` of a SQLite-backed Durable Object: SQL and the one alarm. */
export interface WatchdogStorage {
  readonly sql: SqlLike;
  getAlarm(): Promise<number | null>;
  setAlarm(scheduledTime: number): Promise<void>;
  deleteAlarm(): Promise<void>;
  deleteAll(): Promise<void>;
}

/** The `ctx` (DurableObjectState) a Durable Object class is constructed with. */
export interface WatchdogState {
  readonly storage: WatchdogStorage;
}

/** The argument of `alarm()`; absent when a test helper or an old runtime calls it. */
export interface AlarmInfo {
  readonly retryCount: number;
  readonly isRetry: boolean;
  readonly scheduledTime?: number;
}

/** A Durable Object stub: we speak to the watchdog with `fetch`, which every stub has. */
export interface WatchdogStub {
  fetch(
    input: string,
    init: { method: string; headers: Record<string, string>; body?: string },
  ): Promise<Response>;
}

/** The `LOCK_WATCHDOG` binding (a DurableObjectNamespace). */
export interface WatchdogNamespace {
  idFromName(name: string): unknown;
  get(id: unknown): WatchdogStub;
}
